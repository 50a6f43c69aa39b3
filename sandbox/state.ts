// Everything one sandbox holds, wired once: clock, store, ids, settings, counters, the delivery
// queue and the two accounts. The HTTP apps and the control API are views onto this.
import { type Clock, nowSeconds, systemClock } from './clock.ts'
import { createCrmAccount } from './crm-account.ts'
import { createDeliveryQueue } from './deliveries.ts'
import {
  type Behaviour,
  type BehaviourPatch,
  behaviourPatchSchema,
  type Counters,
  defaultBehaviour,
  type Faults,
  type FaultsPatch,
  faultsPatchSchema,
  noFaults,
  patchFaults,
  zeroCounters,
} from './faults.ts'
import { settleDelivery } from './hooks.ts'
import { createIds } from './ids.ts'
import { PLURALS } from './kinds.ts'
import { createRandom } from './random.ts'
import { createReservationAccount } from './reservation-account.ts'
import { seedUsers } from './seed.ts'
import { createStore } from './store.ts'
import {
  defaultUndocumentedPaging,
  type UndocumentedPaging,
  type UndocumentedPagingPatch,
  undocumentedPagingPatchSchema,
} from './undocumented-paging.ts'
import { createView } from './view.ts'

export interface StateOptions {
  /** Seed number of the generated data, the ids and the fault decisions (default 1). */
  seed?: number
  /** Default: the system clock. Tests pass `manualClock()`. */
  clock?: Clock
  /** The accounts' local offset from UTC (default 60: `+01:00`). */
  utcOffsetMinutes?: number
  faults?: FaultsPatch
  behaviour?: BehaviourPatch
  /** How the reservation indexes whose paging is not shown page (default: the least helpful). */
  undocumentedPaging?: UndocumentedPagingPatch
}

export const CRM_ACCOUNT_ID = 87444
export const RESERVATION_ACCOUNT_ID = 4711

export type SandboxState = ReturnType<typeof createState>

export function createState(options: StateOptions = {}) {
  const seed = options.seed ?? 1
  const clock = options.clock ?? systemClock
  const offsetMinutes = options.utcOffsetMinutes ?? 60
  const store = createStore(PLURALS)
  const ids = createIds(seed)
  const faults: Faults = noFaults()
  patchFaults(faults, faultsPatchSchema.parse(options.faults ?? {}))
  const behaviour: Behaviour = {
    ...defaultBehaviour(),
    ...behaviourPatchSchema.parse(options.behaviour ?? {}),
  }
  const undocumentedPaging: UndocumentedPaging = {
    ...defaultUndocumentedPaging(),
    ...undocumentedPagingPatchSchema.parse(options.undocumentedPaging ?? {}),
  }
  const users = seedUsers(store, ids)
  const holder = { counters: zeroCounters() }
  const counters = (): Counters => holder.counters
  const deliveries = createDeliveryQueue({
    faults: () => faults.deliveries,
    timeoutMs: () => behaviour.deliveryTimeoutMs,
    // Streams of their own, so API calls and deliveries do not shift each other's fault decisions.
    random: createRandom(seed ^ 0xde11),
    counters: () => holder.counters.deliveries,
    settled: (delivery, ok) => settleDelivery(store, delivery.hookId, ok, nowSeconds(clock)),
  })
  const common = { store, ids, clock, behaviour: () => behaviour, counters }
  return {
    seed,
    clock,
    offsetMinutes,
    store,
    ids,
    faults,
    behaviour,
    undocumentedPaging,
    holder,
    apiRandom: createRandom(seed ^ 0xa91),
    /** Orders ties anew on every index request (behaviour `tieOrder`). */
    tieRandom: createRandom(seed ^ 0x71e5),
    /** The user who owns the CRM API key; the next one plays the user of the upstream's UI. */
    apiUserId: users[0] as number,
    uiUserId: users[1] as number,
    deliveries,
    crm: createCrmAccount({ ...common, view: createView(store, CRM_ACCOUNT_ID, offsetMinutes), deliveries }),
    reservation: createReservationAccount({
      ...common,
      view: createView(store, RESERVATION_ACCOUNT_ID, offsetMinutes),
    }),
  }
}
