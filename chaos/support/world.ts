// The simulated world a scenario runs in: the project's sandbox (the CRM and the reservation service,
// in this process, on loopback, rate limits off), a stream of changes made in it as its users would
// (demo/changes.ts: they fire the CRM's webhooks at the engine's PUBLIC_URL), and convergence:
// the mirror matching the sandbox's truth as DESIGN.md defines it (test/support/truth.ts).
import { changeStream } from '../../demo/changes.ts'
import {
  type BehaviourPatch,
  type Sandbox,
  SandboxError,
  type SeedCount,
  startSandbox,
} from '../../sandbox/index.ts'
import type { Db } from '../../src/store/database.ts'
import { differences } from '../../test/support/truth.ts'
import type { Scope } from './cleanup.ts'
import { sleep } from './scenario.ts'
import { describeLongActiveJobs, describeSweeps } from './sweeps.ts'

export async function startWorld(
  scope: Scope,
  options: { seedSize: SeedCount; seed?: number; behaviour?: BehaviourPatch; latencyMs?: number },
): Promise<Sandbox> {
  const sandbox = await startSandbox({
    seedSize: options.seedSize,
    seed: options.seed ?? 7,
    behaviour: { crmRateLimit: null, reservationRateLimit: null, ...options.behaviour },
    faults: {
      crm: { latencyMs: options.latencyMs ?? 0 },
      reservation: { latencyMs: options.latencyMs ?? 0 },
    },
  })
  scope.defer(() => sandbox.stop())
  return sandbox
}

export interface Changes {
  /** Changes made so far. */
  made(): number
  /** Stops making changes and waits for the deliveries queued so far to be attempted. */
  stop(): Promise<number>
}

/** `perSecond` changes a second in the sandbox until stopped. */
export function startChanges(sandbox: Sandbox, perSecond: number, seed = 11): Changes {
  const stream = changeStream(sandbox, seed)
  let made = 0
  const timer = setInterval(() => {
    try {
      stream.next()
      made++
    } catch (error) {
      // A change the sandbox refuses (a tag the record has already): as a user's, it changes nothing.
      if (!(error instanceof SandboxError)) throw error
    }
  }, 1000 / perSecond)
  let stopping: Promise<number> | undefined
  return {
    made: () => made,
    stop() {
      stopping ??= (async () => {
        clearInterval(timer)
        await sandbox.control.drainDeliveries()
        return made
      })()
      return stopping
    },
  }
}

/**
 * Waits until the mirror matches the sandbox (CRM and reservations); resolves with the seconds it
 * took, or throws with the differences left after `timeoutMs` and the state of the sweeps.
 */
export async function waitConverged(db: Db, sandbox: Sandbox, timeoutMs: number): Promise<number> {
  const start = Date.now()
  let left: string[] = []
  while (Date.now() - start < timeoutMs) {
    left = await differences(db, sandbox, { reservation: true, limit: 5 })
    if (left.length === 0) return (Date.now() - start) / 1000
    await sleep(1000)
  }
  const sweeps = await Promise.all([describeSweeps(db), describeLongActiveJobs(db)]).then(
    (parts) => parts.flat(),
    (error: Error) => [`(sweeps unreadable: ${error.message})`],
  )
  throw new Error(
    `the mirror did not converge within ${timeoutMs / 1000} s:\n  ${left.join('\n  ')}\n` +
      `sweeps at that time (UTC):\n  ${sweeps.join('\n  ')}`,
  )
}

/** Person ids the deliveries may name: live ones. */
export const livePeople = (sandbox: Sandbox) => () => sandbox.control.crm.liveIds('people')
