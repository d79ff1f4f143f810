// What every Outbox over a FrameWriter shares, whatever its wire: backpressure and the
// writer's lifecycle. Each wire's outbox extends it with its own frames.

import type { FrameWriter } from "../framing/frame_writer.ts";

/** The FrameWriter side of an Outbox: backpressure, flush, close and abort. */
export abstract class WriterOutbox {
  protected readonly writer: FrameWriter;

  constructor(writer: FrameWriter) {
    this.writer = writer;
  }

  get desiredSize(): number {
    return this.writer.desiredSize;
  }

  get ready(): Promise<void> {
    return this.writer.ready;
  }

  writable(): Promise<void> | undefined {
    return this.writer.desiredSize > 0 ? undefined : this.writer.ready;
  }

  writeQueued(): void {
    this.writer.writeQueued();
  }

  flush(): Promise<void> {
    return this.writer.flush();
  }

  close(): Promise<void> {
    return this.writer.close();
  }

  abort(): Promise<void> {
    return this.writer.abort();
  }
}
