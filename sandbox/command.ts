// `crm-sync sandbox`: both simulated services on fixed loopback ports, seeded, until Ctrl-C.
import { parseArgs } from 'node:util'
import { type SandboxOptions, startSandbox } from './sandbox.ts'

const USAGE = `Usage: crm-sync sandbox [options]

Serves a simulated CRM and reservation service on loopback, for demos and tests.

Options:
  --seed <count>            records of each resource to generate (default 100)
  --random-seed <n>         seed number of the generated data (default 1)
  --crm-port <port>         default 4010 (0: any free port)
  --reservation-port <port> default 4011 (0: any free port)
  --host <address>          default 127.0.0.1
  -h, --help                show this help`

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

/** `crm-sync sandbox [--seed 1000] [--crm-port 4010] ...`: serves until stopped; returns the exit code. */
export async function runSandboxCommand(argv: string[], io: SandboxCommandIo = {}): Promise<number> {
  const log = io.log ?? ((line: string) => console.log(line))
  let options: SandboxOptions
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
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
    options = {
      seedSize: integerOption(values.seed, 100),
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
