// Where a decoder puts each whole frame: a TransformStream's controller, or the queue of a
// synchronous splitter (_queue_splitter.ts).

/** Takes whole frames, in order. */
export interface FrameSink {
  enqueue(frame: Uint8Array): void;
}
