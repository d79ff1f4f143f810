// For the hostile workers: closes every descriptor of the pipe at `fd` (Deno keeps copies of its
// stdio, so closing `fd` alone ends nothing), so that the parent sees the pipe end while this
// process lives on. Linux only (libc, /proc/self/fd); the workers need `ffi` permission.

/** Closes every descriptor of this process that refers to the pipe at `fd`. */
export function closePipe(fd: number): void {
  const libc = Deno.dlopen("libc.so.6", {
    close: { parameters: ["i32"], result: "i32" },
    readlink: { parameters: ["buffer", "buffer", "usize"], result: "isize" },
  });
  const link = (n: number) => {
    const out = new Uint8Array(256);
    const path = new TextEncoder().encode(`/proc/self/fd/${n}\0`);
    const length = Number(libc.symbols.readlink(path, out, 256n));
    return length < 0 ? undefined : new TextDecoder().decode(out.subarray(0, length));
  };
  const pipe = link(fd);
  for (let n = 0; n < 1024; n++) if (link(n) === pipe) libc.symbols.close(n);
}
