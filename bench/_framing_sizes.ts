// Payload sizes of the framing bench, and frames per iteration for each (about 256 KiB to
// 4 MiB of payload, so per-iteration set-up is noise next to the per-frame cost).

/** Frames per iteration, by payload size label. */
export const FRAMES: Record<string, { size: number; frames: number }> = {
  "64B": { size: 64, frames: 4096 },
  "1KiB": { size: 1024, frames: 1024 },
  "64KiB": { size: 64 * 1024, frames: 32 },
  "1MiB": { size: 1024 * 1024, frames: 4 },
};
