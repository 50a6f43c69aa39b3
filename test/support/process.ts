// Runs crm-sync as a child process, the way an operator or a container would.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const CLI = fileURLToPath(new URL('../../bin/crm-sync.js', import.meta.url))

export interface CliProcess {
  child: ChildProcess
  output(): string
  exited: Promise<number | null>
}

export function runCli(
  args: string[],
  /**
   * `group`: in a process group of its own, as a terminal's foreground job (signal it with `-pid`).
   * `node`: the Node that starts the launcher (default this one), e.g. an older system Node.
   */
  options: { env: Record<string, string>; cwd: string; group?: boolean; node?: string },
): CliProcess {
  // Only what the test gives: no CRM_* or DATABASE_URL of the developer's shell leaks in.
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...options.env }
  const child = spawn(options.node ?? process.execPath, [CLI, ...args], {
    cwd: options.cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.group ?? false,
  })
  let output = ''
  child.stdout?.on('data', (chunk) => {
    output += chunk
  })
  child.stderr?.on('data', (chunk) => {
    output += chunk
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  return { child, output: () => output, exited }
}

/**
 * Polls until `probe` returns a value, or fails after `timeoutMs`. A probe may throw (an assertion that
 * does not hold yet): on timeout the last error it threw is in the message and is the error's `cause`,
 * so a timeout says what differed. A probe that only returns `undefined` says nothing: assert instead.
 */
export async function waitFor<T>(
  probe: () => Promise<T | undefined>,
  timeoutMs: number,
  what: string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  let threwLast = false
  while (Date.now() < deadline) {
    try {
      const value = await probe()
      if (value !== undefined) return value
      threwLast = false
    } catch (error) {
      lastError = error
      threwLast = true
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const message = `timed out after ${timeoutMs} ms waiting for ${what}`
  if (lastError === undefined) throw new Error(message)
  const detail = lastError instanceof Error ? lastError.message : String(lastError)
  const when = threwLast ? 'the last probe failed' : 'the last probe returned nothing; an earlier one failed'
  throw new Error(`${message}; ${when}: ${detail}`, { cause: lastError })
}

export async function readyStatus(port: number): Promise<number | undefined> {
  const response = await fetch(`http://127.0.0.1:${port}/readyz`)
  return response.status === 200 ? 200 : undefined
}

/**
 * How `promise` settled, or `{ status: 'pending' }` if it had not after `withinMs`: a bound on a wait
 * that must end by itself (a request that must be answered in time), never a sleep.
 */
export async function settledWithin<T>(
  promise: Promise<T>,
  withinMs: number,
): Promise<
  { status: 'fulfilled'; value: T } | { status: 'rejected'; reason: unknown } | { status: 'pending' }
> {
  let timer: NodeJS.Timeout | undefined
  const pending = new Promise<{ status: 'pending' }>((resolve) => {
    timer = setTimeout(() => resolve({ status: 'pending' }), withinMs)
  })
  const settled = promise.then(
    (value) => ({ status: 'fulfilled' as const, value }),
    (reason: unknown) => ({ status: 'rejected' as const, reason }),
  )
  try {
    return await Promise.race([settled, pending])
  } finally {
    clearTimeout(timer)
  }
}
