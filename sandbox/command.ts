// `crm-sync sandbox`: both simulated services on fixed loopback ports, seeded, until Ctrl-C.
import { parseArgs } from 'node:util'
import { type SandboxOptions, startSandbox } from './sandbox.ts'

const USAGE = `Usage: crm-sync sandbox [options]

Serves a simulated CRM and reservation service on loopback, for demos and tests.

Options:
  --records <count>         records of each resource to generate (default 100)
  --random-seed <n>         which data: the same number generates the same records (default 1)
  --crm-port <port>         default 4010 (0: any free port)
  --reservation-port <port> default 4011 (0: any free port)
  --host <address>          default 127.0.0.1
  -h, --help                show this help`

/** What `--seed` (the former name of `--records`) prints. */
export const RENAMED_SEED =
  '--seed is now --records (records of each resource); --random-seed picks which data'

function integerOption(value: string | boolean | undefined, fallback: number): number {
  if (value === undefined) return fallback
  const parsed = Number(value)
  if (typeof value !== 'string' || !Number.isInteger(parsed) || parsed < 0)
    throw new Error(`not a number: ${value}`)
  return parsed
}

export interface SandboxCommandIo {
  log?(line: string): void
  /** Stops the sandbox when aborted; default: SIGINT or SIGTERM. */
  signal?: AbortSignal
}

/** `crm-sync sandbox [--records 1000] [--crm-port 4010] ...`: serves until stopped; returns the exit code. */
export async function runSandboxCommand(argv: string[], io: SandboxCommandIo = {}): Promise<number> {
  const log = io.log ?? ((line: string) => console.log(line))
  let options: SandboxOptions
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        records: { type: 'string' },
        // The former name of --records, easily taken for --random-seed: still read, with a warning.
        seed: { type: 'string' },
        'random-seed': { type: 'string' },
        'crm-port': { type: 'string' },
        'reservation-port': { type: 'string' },
        host: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    })
    if (values.help) {
      log(USAGE)
      return 0
    }
    if (values.seed !== undefined) log(RENAMED_SEED)
    options = {
      seedSize: integerOption(values.records ?? values.seed, 100),
      seed: integerOption(values['random-seed'], 1),
      crmPort: integerOption(values['crm-port'], 4010),
      reservationPort: integerOption(values['reservation-port'], 4011),
      host: values.host ?? '127.0.0.1',
    }
  } catch (error) {
    log(`crm-sync sandbox: ${(error as Error).message}\n\n${USAGE}`)
    return 2
  }

  const sandbox = await startSandbox(options)
  log(`Sandbox running (${options.seedSize} records of each resource, seed ${options.seed}).
  CRM:          ${sandbox.crmUrl}/api   key ${sandbox.crmApiKey} (apikey parameter or X-apikey header)
  Reservations: ${sandbox.reservationUrl}/api   key ${sandbox.reservationApiKey} (Authorization: Token token="...")
  Control API:  ${sandbox.crmUrl}/__sandbox  (faults, behaviour, counters, deliveries/drain, crm/..., reservation/...)

Point crm-sync at it:
  CRM_BASE_URL=${sandbox.crmUrl}
  CRM_API_KEY=${sandbox.crmApiKey}
  RESERVATION_BASE_URL=${sandbox.reservationUrl}
  RESERVATION_API_KEY=${sandbox.reservationApiKey}
Press Ctrl-C to stop.`)

  await new Promise<void>((resolve) => {
    if (io.signal) {
      if (io.signal.aborted) resolve()
      io.signal.addEventListener('abort', () => resolve(), { once: true })
      return
    }
    process.once('SIGINT', () => resolve())
    process.once('SIGTERM', () => resolve())
  })
  await sandbox.stop()
  return 0
}
