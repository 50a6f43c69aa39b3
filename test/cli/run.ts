// Runs `crm-sync` as a child process and keeps stdout apart from stderr, since `--json` output must
// be alone on stdout for a script to read it.
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type CliProcess, runCli } from '../support/process.ts'

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

export function startCli(args: string[], env: Record<string, string>, cwd: string) {
  const run = runCli(args, { env, cwd })
  let stdout = ''
  let stderr = ''
  run.child.stdout?.on('data', (chunk) => {
    stdout += chunk
  })
  run.child.stderr?.on('data', (chunk) => {
    stderr += chunk
  })
  return {
    ...run,
    stdout: () => stdout,
    stderr: () => stderr,
    async result(): Promise<CliResult> {
      const code = await run.exited
      return { code, stdout, stderr }
    },
  } satisfies CliProcess & Record<string, unknown>
}

export function cli(args: string[], env: Record<string, string>, cwd: string): Promise<CliResult> {
  return startCli(args, env, cwd).result()
}

const workdirs: string[] = []

/** An empty working directory: no .env, no .data of the developer's. Removed by removeWorkdirs. */
export async function workdir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'crm-sync-cli-'))
  await chmod(dir, 0o755) // an embedded PostgreSQL may run as the postgres user
  workdirs.push(dir)
  return dir
}

export async function removeWorkdirs(): Promise<void> {
  for (const dir of workdirs.splice(0)) await rm(dir, { recursive: true, force: true })
}
