/**
 * The parent's side of a stdio transport: {@linkcode spawnTransport} spawns a program and
 * talks to it over its stdin/stdout; {@linkcode childTransport} wraps a child you spawned
 * yourself (`Deno.Command`, or `node:child_process` on Node and Bun). Both work on Deno, Node
 * and Bun. Re-exported by `@conduit/ipc/transports/stdio`.
 *
 * @module
 */

import { integerOption } from "../_options.ts";
import { ChildProcessTransport, type StderrLinesOptions } from "./_child_process.ts";
import { adoptChild, type NodeChildProcess, spawnChild } from "../_spawn.ts";

export type { NodeChildProcess };
import { DEFAULT_PIPE_BUFFER_BYTES } from "./stdio_child.ts";
import type { Transport } from "./types.ts";

/** The default {@linkcode ChildTransportOptions.exitTimeout}: 2 seconds. */
export const DEFAULT_CHILD_EXIT_TIMEOUT = 2000;
/** The longest stderr line handed to a callback; a longer one is split: 64 KiB. */
export const MAX_STDERR_LINE_CHARS: number = 64 * 1024;

/**
 * What to do with a child's stderr: pass it through to ours (`"inherit"`), drop it
 * (`"discard"`), or call a function with each line (without its line break).
 */
export type StderrHandling = "inherit" | "discard" | ((line: string) => void);

/** Options for {@linkcode childTransport}. */
export interface ChildTransportOptions {
  /**
   * What to do with the child's stderr when it is piped. Either way it is read to its end,
   * so the child never blocks on it. A callback must not throw; if it does, the error is
   * reported like an uncaught exception (`reportError`) and stderr is drained silently from
   * then on.
   *
   * @default {"discard"}
   */
  stderr?: "discard" | ((line: string) => void);
  /**
   * How long `close()` waits for the child to exit after closing its stdin, in milliseconds,
   * before killing it with `SIGKILL`.
   *
   * @default {DEFAULT_CHILD_EXIT_TIMEOUT} (2000)
   */
  exitTimeout?: number;
  /**
   * The kernel buffer to ask for on the child's stdin and on its stdout, in bytes, once
   * 256 KiB have crossed that pipe (so a quiet transport keeps the default and costs
   * nothing); `0` never asks. Linux only, and only when this process has FFI permission
   * (`--allow-ffi` or `-A`), as Deno has no API for it: it is done through libc, never with a
   * prompt; otherwise the pipes keep the OS default (64 KiB). The kernel may refuse: past
   * `/proc/sys/fs/pipe-max-size`, or past the user's pipe budget
   * (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by default, shared by every pipe of the
   * user), which a host with dozens of busy children can reach; set it lower there.
   *
   * @default {DEFAULT_PIPE_BUFFER_BYTES} (1 MiB)
   */
  pipeBufferBytes?: number;
}

/** Options for {@linkcode spawnTransport}. */
export interface SpawnTransportOptions {
  /**
   * Arguments for the program.
   *
   * @default {[]}
   */
  args?: string[];
  /**
   * The working directory of the child.
   *
   * @default {undefined} (ours)
   */
  cwd?: string | URL;
  /**
   * Environment variables to set for the child, on top of ours unless `clearEnv`.
   *
   * @default {undefined}
   */
  env?: Record<string, string>;
  /**
   * Start the child with only the variables in `env`.
   *
   * @default {false}
   */
  clearEnv?: boolean;
  /**
   * What to do with the child's stderr; see {@linkcode StderrHandling}.
   *
   * @default {"inherit"}
   */
  stderr?: StderrHandling;
  /**
   * How long `close()` waits for the child to exit after closing its stdin, in milliseconds,
   * before killing it with `SIGKILL`.
   *
   * @default {DEFAULT_CHILD_EXIT_TIMEOUT} (2000)
   */
  exitTimeout?: number;
  /**
   * The kernel buffer to ask for on the child's stdin and on its stdout, in bytes, once
   * 256 KiB have crossed that pipe (so a quiet transport keeps the default and costs
   * nothing); `0` never asks. Linux only, and only when this process has FFI permission
   * (`--allow-ffi` or `-A`), as Deno has no API for it: it is done through libc, never with a
   * prompt; otherwise the pipes keep the OS default (64 KiB). The kernel may refuse: past
   * `/proc/sys/fs/pipe-max-size`, or past the user's pipe budget
   * (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by default, shared by every pipe of the
   * user), which a host with dozens of busy children can reach; set it lower there.
   *
   * @default {DEFAULT_PIPE_BUFFER_BYTES} (1 MiB)
   */
  pipeBufferBytes?: number;
}

/**
 * A transport to a child process: its `writable` feeds the child's stdin, its `readable`
 * carries the child's stdout.
 *
 * `close()` flushes, closes the child's stdin, drains its stdout until it exits (killing it
 * with `SIGKILL` after `exitTimeout`), and resolves once it has exited and every pipe is
 * closed. `abort()` kills the child with `SIGKILL` at once. Closing `writable` only closes
 * the child's stdin, so its remaining output can still be read.
 */
export interface ChildTransport extends Transport {
  /** The child's process id. */
  readonly pid: number;
  /** Resolves with the child's exit status once it has exited. */
  readonly status: Promise<Deno.CommandStatus>;
}

/**
 * Spawns `command` with piped stdin and stdout and returns a transport to it.
 *
 * @param command The program to run (looked up in `PATH` unless it is a path).
 * @param options Arguments, environment, stderr handling; see
 * {@linkcode SpawnTransportOptions}.
 * @returns The transport, with the child's `pid` and `status`.
 * @throws {Deno.errors.NotFound} When the program does not exist.
 *
 * @example
 * ```ts
 * import { spawnTransport } from "@conduit/ipc/transports/stdio";
 * import assert from "node:assert/strict";
 *
 * const lines: string[] = [];
 * const child = spawnTransport(Deno.execPath(), {
 *   args: ["eval", "console.error('starting'); await Deno.stdin.readable.pipeTo(Deno.stdout.writable)"],
 *   stderr: (line) => lines.push(line),
 * });
 * const writer = child.writable.getWriter();
 * await writer.write(new Uint8Array([1, 2, 3]));
 * const { value } = await child.readable.getReader().read();
 * assert.deepEqual(value, new Uint8Array([1, 2, 3]));
 * writer.releaseLock();
 * await child.close();
 * assert.deepEqual(lines, ["starting"]);
 * assert.equal((await child.status).success, true);
 * ```
 */
export function spawnTransport(
  command: string | URL,
  options: SpawnTransportOptions = {},
): ChildTransport {
  const stderr = options.stderr ?? "inherit";
  const pipeBufferBytes = pipeBufferBytesOption(options);
  const child = spawnChild(command, {
    args: options.args,
    cwd: options.cwd,
    env: options.env,
    clearEnv: options.clearEnv,
    stdin: "piped",
    stdout: "piped",
    stderr: stderr === "inherit" ? "inherit" : stderr === "discard" ? "null" : "piped",
  });
  return new ChildProcessTransport(child, {
    label: `child process ${child.pid} (${command})`,
    exitTimeout: options.exitTimeout ?? DEFAULT_CHILD_EXIT_TIMEOUT,
    pipeBufferBytes,
    stderr: stderrLines(typeof stderr === "function" ? stderr : "discard"),
  });
}

/**
 * Wraps a child process spawned with `stdin: "piped"` and `stdout: "piped"` (with
 * `node:child_process`: `stdio: ["pipe", "pipe", …]`) in a transport.
 * The transport owns the child's pipes from now on; if its stderr is piped too, it is
 * drained as `options.stderr` says.
 *
 * @param child The child process: a `Deno.ChildProcess`, or a `node:child_process` one.
 * @param options stderr handling and exit timeout; see {@linkcode ChildTransportOptions}.
 * @returns The transport, with the child's `pid` and `status`.
 * @throws {TypeError} When the child's stdin or stdout is not piped.
 *
 * @example
 * ```ts
 * import { childTransport } from "@conduit/ipc/transports/stdio";
 * import assert from "node:assert/strict";
 *
 * const child = new Deno.Command("cat", { stdin: "piped", stdout: "piped" }).spawn();
 * await using transport = childTransport(child);
 * const writer = transport.writable.getWriter();
 * await writer.write(new Uint8Array([42]));
 * await writer.close();
 * assert.deepEqual(await Array.fromAsync(transport.readable), [new Uint8Array([42])]);
 * assert.equal(transport.pid, child.pid);
 * ```
 */
export function childTransport(
  child: Deno.ChildProcess | NodeChildProcess,
  options: ChildTransportOptions = {},
): ChildTransport {
  const adopted = adoptChild(child);
  return new ChildProcessTransport(adopted, {
    label: `child process ${adopted.pid}`,
    exitTimeout: options.exitTimeout ?? DEFAULT_CHILD_EXIT_TIMEOUT,
    pipeBufferBytes: pipeBufferBytesOption(options),
    stderr: stderrLines(options.stderr ?? "discard"),
  });
}

function pipeBufferBytesOption(options: { pipeBufferBytes?: number }): number {
  return integerOption("pipeBufferBytes", options.pipeBufferBytes ?? DEFAULT_PIPE_BUFFER_BYTES, 0);
}

function stderrLines(handling: "discard" | ((line: string) => void)): StderrLinesOptions {
  const onLine = typeof handling === "function" ? handling : undefined;
  return { maxLineChars: MAX_STDERR_LINE_CHARS, onLine };
}
