// `crm-sync sandbox` (bin/crm-sync.js runs this file in place of the CLI) and `npm run sandbox`.
import { runSandboxCommand } from './command.ts'

export function run(args: string[]): Promise<number> {
  return runSandboxCommand(args)
}

if (import.meta.main) {
  process.exitCode = await run(process.argv.slice(2))
}
