// crm-sync engines as an operator runs them: `crm-sync start` in a process of its own (and a process
// group of its own, so that kill -9 takes it whole and Ctrl-C reaches the suite first), listening on
// loopback, in an empty working folder (no developer's .env leaks in). Every engine is tracked, so
// that it is killed on any exit path (cleanup.ts).
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NODE_FLAGS } from '../../bin/node-flags.js'
import type { Sandbox } from '../../sandbox/index.ts'
import { type CliProcess, readyStatus, runCli } from '../../test/support/process.ts'
import { killGroup, type Scope, trackGroup, untrackGroup } from './cleanup.ts'

export const CHAOS_SECRET = 'chaos-secret-0123456789abcdef'
export const CHAOS_ADMIN_TOKEN = 'chaos-admin-token-0123456789'

export type Upstream = Pick<Sandbox, 'crmUrl' | 'crmApiKey' | 'reservationUrl' | 'reservationApiKey'>

/**
 * The environment of an engine against the sandbox: rate limits lifted (the sandbox's are off too),
 * incremental sweeps every 10 s, the full reconciliation only on 1 January, warnings and errors logged,
 * the V8 flags `crm-sync start` runs with, and CHAOS_ENGINE_NODE_OPTIONS when set (e.g. `--import
 * ./try-a-fix.mjs` or `--cpu-prof`).
 */
export function engineEnv(
  upstream: Upstream,
  options: { databaseUrl: string; port: number; publicUrl?: string; env?: Record<string, string> },
): Record<string, string> {
  return {
    CRM_BASE_URL: upstream.crmUrl,
    CRM_API_KEY: upstream.crmApiKey,
    RESERVATION_BASE_URL: upstream.reservationUrl,
    RESERVATION_API_KEY: upstream.reservationApiKey,
    DATABASE_URL: options.databaseUrl,
    HOST: '127.0.0.1',
    PORT: String(options.port),
    WEBHOOK_SECRET: CHAOS_SECRET,
    ADMIN_TOKEN: CHAOS_ADMIN_TOKEN,
    INCREMENTAL_SYNC_INTERVAL: '10',
    CRM_RATE_LIMIT: '1000',
    RESERVATION_RATE_LIMIT: '1000',
    FULL_SYNC_CRON: '0 3 1 1 *',
    SHUTDOWN_TIMEOUT_SECONDS: '10',
    LOG_LEVEL: 'warn',
    NODE_OPTIONS: [...NODE_FLAGS, process.env.CHAOS_ENGINE_NODE_OPTIONS ?? ''].join(' ').trim(),
    ...(options.publicUrl ? { PUBLIC_URL: options.publicUrl } : {}),
    ...options.env,
  }
}

export interface Engine {
  name: string
  port: number
  url: string
  /** Exit code of the current process, undefined while it runs (null: killed by a signal). */
  exitCode(): number | null | undefined
  /** Everything every process of this engine wrote, restarts included. */
  output(): string
  /** Resolves once /readyz answers 200. */
  ready(timeoutMs?: number): Promise<void>
  /** kill -9 of the whole process group; resolves once it exited. */
  kill(): Promise<void>
  /** A new process with the same environment and port (after kill or exit). */
  restart(): Promise<void>
  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code. */
  stop(graceMs?: number): Promise<number | null>
}

export async function startEngine(name: string, env: Record<string, string>, scope: Scope): Promise<Engine> {
  const cwd = await mkdtemp(join(tmpdir(), 'crm-sync-chaos-'))
  scope.defer(() => rm(cwd, { recursive: true, force: true }))
  const port = Number(env.PORT)
  let earlier = ''
  let current: CliProcess | undefined
  let code: number | null | undefined

  const spawn = () => {
    const run = runCli(['start'], { cwd, env, group: true })
    const pid = run.child.pid as number
    trackGroup(pid)
    code = undefined
    current = run
    void run.exited.then((exit) => {
      untrackGroup(pid)
      if (current === run) code = exit
    })
  }
  const exited = async () => {
    if (!current) return
    await current.exited
    earlier += current.output()
    current = undefined
  }
  const engine: Engine = {
    name,
    port,
    url: `http://127.0.0.1:${port}`,
    exitCode: () => code,
    output: () => earlier + (current?.output() ?? ''),
    async ready(timeoutMs = 90_000) {
      const deadline = Date.now() + timeoutMs
      while (Date.now() < deadline) {
        if (code !== undefined) throw new Error(`${name} exited with ${code}:\n${tail(engine.output())}`)
        if ((await readyStatus(port).catch(() => undefined)) === 200) return
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      throw new Error(`${name} not ready within ${timeoutMs / 1000} s:\n${tail(engine.output())}`)
    },
    async kill() {
      if (current && code === undefined) killGroup(current.child.pid as number)
      await exited()
    },
    async restart() {
      await engine.kill()
      spawn()
    },
    async stop(graceMs = 15_000) {
      const run = current
      if (!run) return code ?? null
      if (code === undefined) {
        try {
          process.kill(-(run.child.pid as number), 'SIGTERM')
        } catch {}
      }
      const timer = setTimeout(() => killGroup(run.child.pid as number), graceMs)
      const exit = await run.exited
      clearTimeout(timer)
      await exited()
      return exit
    },
  }
  spawn()
  scope.defer(() => engine.kill())
  return engine
}

/** The last lines of an engine's output, for a failure message. */
export function tail(output: string, lines = 20): string {
  return output.trimEnd().split('\n').slice(-lines).join('\n')
}

/** Log lines of level error (50) or fatal (60) in an engine's JSON log. */
export function errorLines(output: string): string[] {
  return output.split('\n').filter((line) => /"level":(50|60)/.test(line))
}

/**
 * The gist of a crash an engine printed outside its JSON log: the last error's message with the
 * first frames of its stack, and where Node says it was emitted, if it does.
 */
export function crashReport(output: string): string {
  const plain = output.split('\n').filter((line) => line.trim() && !line.startsWith('{'))
  const last = plain.findLastIndex((line) => /^\w*Error\b/.test(line))
  if (last < 0) return plain.slice(-8).join('\n')
  const frames = (from: number) => {
    const lines = [plain[from] as string]
    for (
      let at = from + 1;
      at < plain.length && lines.length < 3 && /^\s+at /.test(plain[at] as string);
      at++
    )
      lines.push(plain[at] as string)
    return lines
  }
  const emitted = plain.findIndex((line, index) => index > last && line.startsWith('Emitted'))
  return [...frames(last), ...(emitted > 0 ? frames(emitted) : [])].join('\n')
}
