// Runs `npm run demo` as a child process, as a terminal would: nothing of the developer's environment,
// a process group of its own. For test/demo/*.test.ts.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { afterEach } from 'vitest'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const running = new Set<ChildProcess>()

/**
 * A test that fails or times out must not leave its demo running: after each test, two Ctrl-Cs end
 * any demo still running at once (its exit hooks still remove the folder and stop PostgreSQL).
 */
export function stopDemosAfterEach(): void {
  afterEach(async () => {
    for (const child of running) {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        process.kill(-(child.pid as number), 'SIGINT')
        process.kill(-(child.pid as number), 'SIGINT')
        await exited
      }
    }
    running.clear()
  })
}

export interface DemoExit {
  code: number | null
  stdout: string
  stderr: string
}

export function startDemo(args: string[]) {
  // Nothing of the developer's environment: no CRM_*, no DATABASE_URL. A process group of its own,
  // as a terminal's foreground job: Ctrl-C signals the whole group.
  const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' }
  const child = spawn(process.execPath, ['demo/main.ts', ...args], { cwd: ROOT, env, detached: true })
  running.add(child)
  const output = { stdout: '', stderr: '' }
  child.stdout.on('data', (chunk) => {
    output.stdout += chunk
  })
  child.stderr.on('data', (chunk) => {
    output.stderr += chunk
  })
  const exited = new Promise<DemoExit>((resolve) =>
    child.once('exit', (code) => resolve({ code, ...output })),
  )
  /**
   * The match once stdout matches `pattern` (its `input`: stdout so far); null if the demo exits
   * first or `timeoutMs` passes.
   */
  const printed = async (pattern: RegExp, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs
    while (!pattern.test(output.stdout) && child.exitCode === null && child.signalCode === null) {
      if (Date.now() > deadline) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    return pattern.exec(output.stdout)
  }
  return {
    child,
    exited,
    printed,
    stdout: () => output.stdout,
    stderr: () => output.stderr,
    /** Whether the demo has exited (or been killed). */
    ended: () => child.exitCode !== null || child.signalCode !== null,
    /** Sends `signal` to the demo's process group, as a terminal's Ctrl-C does. */
    signal: (signal: NodeJS.Signals) => process.kill(-(child.pid as number), signal),
  }
}

export const demo = (args: string[]) => startDemo(args).exited

/** The demo's temporary folder, from its start-up lines. */
export const folderOf = (stdout: string) => /embedded PostgreSQL in (\S+)/.exec(stdout)?.[1]
