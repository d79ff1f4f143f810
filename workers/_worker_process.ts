// One worker process: its pipes, its stderr (read line by line for the tail and forwarded),
// its channel, and how it is stopped (`exitTimeout`, SIGTERM, `killTimeout`, SIGKILL). A
// connection error while the worker lives kills it; once its exit is known, connection
// errors become WorkerExitedError.

import type { ChannelOptions } from "../channel/channel.ts";
import { ConnectionClosedError, HandshakeError } from "../channel/errors.ts";
import type { MethodName, RemoteArgs, RemoteOf } from "../channel/types.ts";
import { ChildProcessTransport, StderrLines } from "../transports/_child_process.ts";
import { DEFAULT_PIPE_BUFFER_BYTES } from "../transports/stdio_child.ts";
import type { ChildTransport } from "../transports/stdio_parent.ts";
import type { Transport } from "../transports/types.ts";
import {
  drainCutReason,
  HeldWorker,
  KeepAlive,
  type WorkerChannel,
  workerChannel,
} from "./_worker_channel.ts";
import type { Holdable, WorkerSocket } from "./_worker_socket.ts";
import { WorkerExitedError, WorkerStdoutError } from "./errors.ts";
import { permissionHint, withPermissionHint } from "./spawn_worker_options.ts";
import type { WorkerHandle } from "./worker_handle.ts";
import { FrameTooLargeError } from "../errors.ts";
import { onExit, outputSync, runtimeOs, type SyncWriter, within } from "../_runtime.ts";
import {
  type ChildProcessLike,
  isNotAllowed,
  isNotFound,
  spawnChild,
  type SpawnOptions,
} from "../_spawn.ts";

/** How long after the worker exited its stderr may stay open (a grandchild holds it). */
const STDERR_LINGER_MS = 200;
/** How long after the worker exited its connection may stay open before it is aborted. */
const CONNECTION_LINGER_MS = 250;
/** Longer stderr lines are split, so one endless line cannot grow memory. */
const MAX_LINE_CHARS = 8 * 1024;

/** How a worker process is run and stopped. */
export interface ProcessOptions {
  name: string;
  stderr: LineSink;
  /** Where stdout lines go when stdout does not carry the channel (`transport: "unix"`). */
  stdout: LineSink;
  stderrTailLines: number;
  exitTimeout: number;
  killTimeout: number;
  /** A `WorkerCommand` (another program), not a worker module: for what errors suggest. */
  command?: boolean;
}

/** One worker process: its pipes, its stderr, its channel and how it is stopped. */
export class WorkerProcess<Api extends object> extends HeldWorker
  implements WorkerHandle<Api>, ProcessControl {
  readonly pid: number;
  get thread(): false {
    return false;
  }
  readonly name: string;
  readonly exited: Promise<Deno.CommandStatus>;
  /** The process's stdin/stdout as a transport; the channel's transport in stdio mode. */
  readonly stdio: ChildTransport;
  readonly #child: ChildProcessLike;
  readonly #stderr: StderrLines;
  readonly #options: ProcessOptions;
  /** Resolves with the status once the process has exited and its stderr is read. */
  readonly #status: Promise<Deno.CommandStatus>;
  #statusKnown = false;
  /** The channel to the worker and its remote, once opened. */
  #link: WorkerChannel<Api> | undefined;
  /** Set once close() was called: connection errors are then expected. */
  #closing = false;
  /** Why this side killed the worker, for WorkerExitedError. */
  #stopReason: string | undefined;
  #stopping: Promise<void> | undefined;
  /** The worker's Unix socket connection, in that mode (for ref and unref). */
  #conn: Holdable | undefined;
  /** Whether the worker keeps this program alive: ref'd and unref'd as unref() asks. */
  protected readonly keepAlive: KeepAlive = new KeepAlive((hold) => {
    try {
      if (hold) this.#child.ref();
      else this.#child.unref();
    } catch {
      // It has exited already.
    }
    try {
      if (hold) this.#conn?.ref();
      else this.#conn?.unref();
    } catch {
      // Closed already.
    }
    if (hold) this.#link?.channel.ref();
    else this.#link?.channel.unref();
  });

  constructor(child: ChildProcessLike, options: ProcessOptions) {
    super();
    this.#child = child;
    this.pid = child.pid;
    this.name = options.name;
    this.#options = options;
    this.#stderr = new StderrLines(child.stderr, {
      maxLineChars: MAX_LINE_CHARS,
      tailLines: options.stderrTailLines,
      onLine: lineWriter(options.stderr, `[${options.name} ${child.pid}] `, outputSync(2)),
    });
    // The transport must not read stderr: we do, for the tail.
    this.stdio = new ChildProcessTransport(child, {
      label: `child process ${child.pid}`,
      // Our own timeouts decide when to signal; this is only a backstop.
      exitTimeout: options.exitTimeout + options.killTimeout + 5_000,
      pipeBufferBytes: DEFAULT_PIPE_BUFFER_BYTES,
      stderr: "untouched",
    });
    const unguard = killAtExit(child);
    this.#status = child.status.then(async (status) => {
      this.#statusKnown = true;
      unguard();
      const linger = setTimeout(() => this.#stderr.cancel(), STDERR_LINGER_MS);
      await this.#stderr.done;
      clearTimeout(linger);
      return status;
    });
    this.exited = this.#status.then(async (status) => {
      const channel = this.#link?.channel;
      if (channel === undefined) {
        await this.stdio.abort();
        return status;
      }
      // The channel normally notices the exit by itself (its input ends); give it a moment
      // to read what the worker wrote before exiting, then make sure.
      const linger = setTimeout(
        () => void channel.abort(new ConnectionClosedError(`${this.name} exited`)),
        CONNECTION_LINGER_MS,
      );
      await channel.closed.catch(() => {});
      clearTimeout(linger);
      await this.stdio.close();
      return status;
    });
  }

  get remote(): RemoteOf<Api> {
    return this.#link!.remote;
  }

  get stderrTail(): readonly string[] {
    return this.#stderr.tail;
  }

  /** Accepts the worker's connection on `socket`, unless the worker exits first. */
  async acceptSocket(socket: WorkerSocket, timeout: number | undefined): Promise<Transport> {
    // stdout is the worker's own in this mode: forward it line by line (never blocking it).
    const prefix = `[${this.name} ${this.pid}] `;
    new StderrLines(this.stdio.readable, {
      maxLineChars: MAX_LINE_CHARS,
      onLine: lineWriter(this.#options.stdout, prefix, outputSync(1)),
    });
    const transport = await socket.accept(this.#child.status, timeout);
    this.#conn = socket.accepted;
    return transport;
  }

  /** Opens the channel over `connection`; on failure stops the worker and throws why. */
  async open(connection: Transport, options: ChannelOptions): Promise<WorkerHandle<Api>> {
    this.#link = workerChannel<Api>(
      new ProcessTransport(connection, this),
      options,
      {
        keepAlive: this.keepAlive,
        translate: (error) => this.#translate(error),
      },
    );
    try {
      await this.#link.channel.opened;
    } catch (error) {
      throw await this.failStart(error);
    }
    return this;
  }

  /** The worker did not start: stop it, release everything, and say why. */
  async failStart(error: unknown): Promise<unknown> {
    this.#closing = true;
    // A worker that is alive but failed the handshake gets no grace.
    const exitedAlready = await this.#exitsWithin(CONNECTION_LINGER_MS);
    if (!exitedAlready) this.#signal("SIGKILL");
    await this.#link?.channel.abort(error);
    const status = await this.exited;
    // Text on stdout explains both the broken handshake and the exit.
    if (stdoutTextError(error) !== undefined) return this.#exitError(status, error);
    if (!exitedAlready && error instanceof HandshakeError && error.code === "handshake_timeout") {
      // It lived on without a word: killed here for that, not crashed. Say what likely happened.
      const question = this.#options.command
        ? "does the command speak the conduit protocol (docs/protocol.md §13)?"
        : "did the module call serveWorker()?";
      return new HandshakeError(
        error.code,
        `${error.message}: worker ${this.name} (pid ${this.pid}) was running but did not ` +
          `answer, and was killed; ${question}`,
        { cause: error },
      );
    }
    // A worker that answered with another codec or version exits because of it: the
    // mismatch is the news. One that went away during the handshake is explained by its exit.
    if (error instanceof HandshakeError && error.code !== "closed") return error;
    if (!exitedAlready && !(error instanceof ConnectionClosedError)) return error;
    return this.#exitError(status, error, true);
  }

  notify<K extends MethodName<Api>>(method: K, param: RemoteArgs<Api[K]>[0]): void {
    this.#link!.channel.notify(method, param);
  }

  async close(): Promise<Deno.CommandStatus> {
    this.#closing = true;
    await this.#link?.channel.close();
    return await this.exited;
  }

  kill(signal: Deno.Signal = "SIGKILL"): Promise<Deno.CommandStatus> {
    this.#stopReason ??= "kill() was called";
    this.#signal(signal);
    return this.exited;
  }

  /**
   * Stops the process once its connection is closed: wait `exitTimeout` for it to exit, then
   * SIGTERM, `killTimeout`, SIGKILL.
   */
  stop(): Promise<void> {
    return this.#stopping ??= this.#stop();
  }

  async #stop(): Promise<void> {
    const { exitTimeout, killTimeout } = this.#options;
    if (!await this.#exitsWithin(exitTimeout)) {
      this.#signal("SIGTERM");
      if (!await this.#exitsWithin(killTimeout)) this.#signal("SIGKILL");
    }
    await this.#child.status;
  }

  async #exitsWithin(ms: number): Promise<boolean> {
    if (this.#statusKnown) return true;
    return await within(this.#child.status.then(() => true), ms, false);
  }

  #signal(signal: Deno.Signal): void {
    if (this.#statusKnown) return;
    try {
      this.#child.kill(signal);
    } catch {
      // It has exited already.
    }
  }

  /** Turns a connection error into WorkerExitedError, once the worker's exit is known. */
  async #translate(error: unknown): Promise<unknown> {
    if (!(error instanceof ConnectionClosedError)) return withPermissionHint(error);
    if (error instanceof WorkerExitedError) return error;
    // A worker that is exiting closes its connection a moment before its exit is reported.
    if (!this.#closing && !await this.#exitsWithin(CONNECTION_LINGER_MS)) {
      // The connection failed (heartbeat, protocol error) while the worker lives: it is of
      // no use any more, and must not outlive its channel.
      this.#stopReason ??= error.message;
      this.#signal("SIGKILL");
    }
    return this.#exitError(await this.#status, error);
  }

  #exitError(
    status: Deno.CommandStatus,
    cause: unknown,
    beforeServing = false,
  ): WorkerExitedError {
    const tail = this.#stderr.tail;
    const stdout = stdoutTextError(cause);
    // Cut off by close() (drainTimeout), the worker exits with 1 once its channel is gone, or
    // by the SIGTERM it got after exitTimeout when busy: the cut is why either way.
    let reason = stdout !== undefined
      ? `it wrote text to its stdout: ${JSON.stringify(stdout.text)}`
      : drainCutReason(cause) ?? (status.signal !== null ? this.#stopReason : undefined);
    // A worker that died of a denied permission says which flag Deno wanted; say which
    // spawnWorker option grants it (the last such line is the one that killed it).
    for (let i = tail.length - 1; i >= 0 && reason === undefined; i--) {
      const hint = permissionHint(tail[i]);
      if (hint !== undefined) reason = `it was denied a permission: ${hint}`;
    }
    return new WorkerExitedError({
      worker: this.name,
      pid: this.pid,
      code: status.code,
      signal: status.signal,
      stderrTail: tail,
      stderrLines: this.#stderr.excerpt,
      stderrShown: this.#options.stderr === "prefix",
      reason,
      beforeServing,
    }, { cause: stdout ?? cause });
  }
}

/** Where a worker's output lines go: our stream with a prefix, nowhere, or a function. */
export type LineSink = "prefix" | "discard" | ((line: string) => void);

const encoder = new TextEncoder();

/** The `onLine` for `sink`: "prefix" writes each line to `stream` after `prefix`. */
function lineWriter(
  sink: LineSink,
  prefix: string,
  stream: SyncWriter,
): ((line: string) => void) | undefined {
  if (sink === "discard") return undefined;
  if (sink !== "prefix") return sink;
  return (line) => {
    const bytes = encoder.encode(prefix + line + "\n");
    let written = 0;
    try {
      while (written < bytes.length) written += stream.writeSync(bytes.subarray(written));
    } catch {
      // Our stream is gone: nowhere left to forward to.
    }
  };
}

// The channel's view of a worker's connection: its stdio, or the Unix socket it connected to.
// Closing or aborting it also stops the process gracefully (`exitTimeout`, SIGTERM,
// `killTimeout`, SIGKILL) instead of the stdio transport's own timeout.
/** What the transport needs from the worker process. */
export interface ProcessControl {
  /** The process's stdin/stdout. */
  readonly stdio: ChildTransport;
  /** Waits for the process to exit, signalling it after the timeouts. */
  stop(): Promise<void>;
}

/** A worker's connection (its stdio or a socket) that stops the process when it closes. */
export class ProcessTransport implements Transport {
  // The connection's direct reads and writes, passed on: without them the channel reads
  // through `readable`, copying every large frame out of read buffers (a fresh 256 KiB one
  // per read) where it would read it straight into a buffer of its own, which doubles the
  // memory a stream of large items leaves for V8 to collect and slows it
  // (bench/stream_memory.ts).
  readonly readInto: ((view: Uint8Array) => Promise<Uint8Array | null>) | undefined;
  readonly readChunk: (() => Promise<Uint8Array | null>) | undefined;
  readonly writeChunk: ((chunk: Uint8Array) => Promise<void> | undefined) | undefined;
  readonly closeWrite: (() => Promise<void>) | undefined;
  readonly #connection: Transport;
  readonly #process: ProcessControl;

  constructor(connection: Transport, process: ProcessControl) {
    this.#connection = connection;
    this.#process = process;
    this.readInto = connection.readInto;
    this.readChunk = connection.readChunk;
    this.writeChunk = connection.writeChunk?.bind(connection);
    this.closeWrite = connection.closeWrite?.bind(connection);
  }

  get readable(): ReadableStream<Uint8Array> {
    return this.#connection.readable;
  }

  get writable(): WritableStream<Uint8Array> {
    return this.#connection.writable;
  }

  async close(): Promise<void> {
    await this.#closeSocket((socket) => socket.close());
    // The channel has closed the worker's stdin by now: the worker will exit.
    await this.#process.stop();
    await this.#process.stdio.close();
  }

  async abort(reason?: unknown): Promise<void> {
    await this.#closeSocket((socket) => socket.abort(reason));
    // The channel aborts when the worker's output ended (it is exiting: let it report its
    // own exit code) or when it failed the worker; a worker that lives on is stopped.
    await this.#process.stop();
    await this.#process.stdio.abort(reason);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Over a socket: ends it, then closes the worker's stdin, its other lifeline. */
  async #closeSocket(end: (socket: Transport) => Promise<void>): Promise<void> {
    const stdio = this.#process.stdio;
    if (this.#connection === stdio) return;
    await end(this.#connection);
    await stdio.writable.close().catch(() => {});
  }
}

// Workers never outlive this process, without pre-empting its own signal handling:
//
// - On Linux, each worker module is started through util-linux `setpriv --pdeathsig KILL`, so the
//   kernel kills it the moment this process dies, however it dies (SIGKILL included) and
//   however busy the worker is. Without `setpriv` (or where `--allow-run` does not allow it)
//   workers are started directly.
// - When this process exits (`Deno.exit()`, the end of the program, or an exit from the
//   application's own signal handler) every worker still running is killed in the `unload`
//   event, on every OS.
// - Otherwise (no `setpriv`, macOS, Windows, or a `WorkerCommand`, and this process killed by
//   a signal) a worker exits when it next reads its stdin and finds it closed: at once when idle, once
//   its synchronous work returns when busy.
//
// conduit installs no signal listener: an application that handles SIGINT or SIGTERM runs its
// handler once, and its workers keep serving during its graceful shutdown.

/** Something to kill when this process exits. */
export interface Killable {
  kill(signal: Deno.Signal): void;
}

const live = new Set<Killable>();
/** Removes killAll from this process's exit, while it is there. */
let unlisten: (() => void) | undefined;
/**
 * Whether `setpriv --pdeathsig` works here: unknown until the first spawn tries it (or finds
 * it is not on Linux; asked then, not at import, so that this module loads on any runtime).
 */
let pdeathsig: boolean | undefined;

/** Kills `worker` when this process exits, until the returned function is called. */
export function killAtExit(worker: Killable): () => void {
  live.add(worker);
  if (live.size === 1) unlisten = onExit(killAll);
  return () => {
    if (live.delete(worker) && live.size === 0) {
      unlisten?.();
      unlisten = undefined;
    }
  };
}

/**
 * Spawns `command`; with `parentDeath`, through `setpriv --pdeathsig KILL` where that works
 * (see the module comment). Only for programs known to exist (the Deno executable): a
 * missing one would otherwise fail inside setpriv instead of with `NotFound` here.
 */
export function spawnProcess(
  command: string | URL,
  options: SpawnOptions,
  parentDeath: boolean,
): ChildProcessLike {
  return parentDeath ? spawnWithParentDeath(command, options) : spawnChild(command, options);
}

function spawnWithParentDeath(
  command: string | URL,
  options: SpawnOptions,
): ChildProcessLike {
  if (pdeathsig === undefined && runtimeOs() !== "linux") pdeathsig = false;
  if (pdeathsig !== false) {
    const program = command instanceof URL ? command.pathname : command;
    try {
      const child = spawnChild("setpriv", {
        ...options,
        args: ["--pdeathsig", "KILL", "--", program, ...(options.args ?? [])],
      });
      pdeathsig = true;
      return child;
    } catch (error) {
      if (!(isNotFound(error) || isNotAllowed(error))) throw error;
      // No setpriv here, or not one this process may run; or this spawn's own options are
      // why (a `cwd` that does not exist, an `env.PATH` without setpriv), which must not cost
      // every later worker its parent-death signal. The direct spawn tells: a missing cwd
      // fails it too, with its own error.
      const child = spawnChild(command, options);
      if (options.env?.PATH === undefined) pdeathsig = false;
      return child;
    }
  }
  return spawnChild(command, options);
}

function killAll(): void {
  for (const worker of live) {
    try {
      worker.kill("SIGKILL");
    } catch {
      // Exited already.
    }
  }
  live.clear();
}

// Telling a worker that printed to its stdout from a broken frame: on the stdio transport a
// text write lands where a frame header is expected, and the decoder refuses the "length" the
// text makes (four printable bytes read as a length are at least 150 MB). Such an error, found
// in a failure's cause chain, becomes a WorkerStdoutError that quotes the text.
/** At most this many bytes of the text are quoted. */
const QUOTED_BYTES = 60;
/** How deep to look in a cause chain. */
const MAX_DEPTH = 8;

/** The WorkerStdoutError that explains `error`, if text on stdout caused it. */
export function stdoutTextError(error: unknown): WorkerStdoutError | undefined {
  let current = error;
  for (let depth = 0; depth < MAX_DEPTH && current instanceof Error; depth++) {
    if (current instanceof WorkerStdoutError) return current;
    if (current instanceof FrameTooLargeError && looksLikeText(current.received)) {
      // The bytes after the text may be the frames that followed it in the same read.
      const received = current.received!.subarray(0, QUOTED_BYTES);
      const end = received.findIndex((byte) => !isTextByte(byte));
      const text = new TextDecoder().decode(end < 0 ? received : received.subarray(0, end));
      return new WorkerStdoutError(text, { cause: current });
    }
    current = current.cause;
  }
  return undefined;
}

/** Whether a frame header is text: each byte printable ASCII, a tab or line break, or UTF-8. */
function looksLikeText(bytes: Uint8Array | undefined): boolean {
  if (bytes === undefined || bytes.length < 4) return false;
  for (let i = 0; i < 4; i++) if (!isTextByte(bytes[i])) return false;
  return true;
}

/** Printable ASCII, a tab or a line break, or a byte of a UTF-8 sequence. */
function isTextByte(byte: number): boolean {
  return (byte >= 0x20 && byte < 0x7f) || byte === 0x09 || byte === 0x0a || byte === 0x0d ||
    byte >= 0x80;
}
