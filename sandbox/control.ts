// Driving the sandbox: fault and behaviour settings, counters, waiting for deliveries, seeding,
// and changes made as a user of the upstream's own UI would make them (they fire webhooks and
// spend no rate limit). In-process for tests, and over HTTP under /__sandbox for everyone else.
import { type Context, Hono } from 'hono'
import { z } from 'zod'
import { nowSeconds } from './clock.ts'
import type { ChildName } from './crm-account.ts'
import {
  type Behaviour,
  type BehaviourPatch,
  behaviourPatchSchema,
  type Counters,
  type Faults,
  type FaultsPatch,
  faultsPatchSchema,
  noFaults,
  patchFaults,
  zeroCounters,
} from './faults.ts'
import { renderHook } from './hooks.ts'
import { type FieldErrors, fieldErrors, idParam, isObject } from './http.ts'
import type { Actor, Outcome, Plural } from './kind.ts'
import { renderBooking, renderContact } from './reservation-account.ts'
import { SEEDED_RESOURCES, type SeedCount, seedRecords } from './seed.ts'
import type { SandboxState } from './state.ts'
import type { Stamped } from './store.ts'

export type CrmCollection = Plural
export type ReservationCollection = 'contacts' | 'bookings'
type Fields = Record<string, unknown>
/** A record, tag or address as the API shows it. */
export type SandboxRecord = { id: number; [key: string]: unknown }
type Rendered = SandboxRecord

/** A control call the sandbox refused: 404 for an unknown record, 422 with field errors. */
export class SandboxError extends Error {
  readonly status: 404 | 422
  readonly errors: FieldErrors
  constructor(status: 404 | 422, message: string, errors: FieldErrors = {}) {
    super(message)
    this.status = status
    this.errors = errors
  }
}

const notFound = (what: string, id: number) => new SandboxError(404, `no ${what} ${id}`)
function valid<R>(outcome: Outcome<R> | null, what: string, id = 0): R {
  if (!outcome) throw notFound(what, id)
  if (!outcome.ok)
    throw new SandboxError(422, `invalid ${what}: ${JSON.stringify(outcome.errors)}`, outcome.errors)
  return outcome.row
}

export type SandboxControl = ReturnType<typeof createControl>

export function createControl(state: SandboxState) {
  const { store, crm, reservation } = state
  const user = (userId?: number): Actor => ({ userId: userId ?? state.uiUserId, api: false })
  const crmRows = (collection: CrmCollection) => crm.kinds[collection].rows(store)
  const childOf = (
    outcome: ReturnType<typeof crm.addChild>,
    collection: CrmCollection,
    id: number,
  ): Rendered => {
    if (!outcome) throw notFound(collection, id)
    if (!outcome.ok) throw new SandboxError(422, JSON.stringify(outcome.errors), outcome.errors)
    return crm.renderChild(collection, id, outcome.child) as Rendered
  }
  const updatedChild = (
    outcome: ReturnType<typeof crm.updateChild>,
    collection: CrmCollection,
    id: number,
  ) => {
    childOf(outcome, collection, id)
  }
  const removedChild = (outcome: true | null, collection: CrmCollection, id: number) => {
    if (!outcome) throw notFound(collection, id)
  }

  const crmControl = {
    /** The record as `show` with every include answers it, or undefined. */
    get(collection: CrmCollection, id: number): Rendered | undefined {
      const kind = crm.kinds[collection]
      const row = kind.rows(store).rows.get(id)
      return row && (kind.render(crm.view, row, new Set(kind.includeOptions)) as Rendered)
    },
    create(collection: CrmCollection, fields: Fields, options: { userId?: number } = {}): Rendered {
      const row: Stamped = valid(crm.create(collection, fields, user(options.userId)), collection)
      return crmControl.get(collection, row.id) as Rendered
    },
    update(
      collection: CrmCollection,
      id: number,
      fields: Fields,
      options: { userId?: number } = {},
    ): Rendered {
      valid(crm.update(collection, id, fields, user(options.userId)), collection, id)
      return crmControl.get(collection, id) as Rendered
    },
    destroy(collection: CrmCollection, id: number, options: { userId?: number } = {}): void {
      if (!crm.destroy(collection, id, user(options.userId))) throw notFound(collection, id)
    },
    addTag: (collection: CrmCollection, id: number, name: string) =>
      childOf(crm.addChild(collection, id, 'tags', { name }, user()), collection, id),
    renameTag: (collection: CrmCollection, id: number, tagId: number, name: string) =>
      updatedChild(crm.updateChild(collection, id, 'tags', tagId, { name }, user()), collection, id),
    removeTag: (collection: CrmCollection, id: number, tagId: number) =>
      removedChild(crm.removeChild(collection, id, 'tags', tagId, user()), collection, id),
    addAddress: (collection: 'people' | 'companies', id: number, fields: Fields) =>
      childOf(crm.addChild(collection, id, 'addrs', fields, user()), collection, id),
    updateAddress: (collection: 'people' | 'companies', id: number, addrId: number, fields: Fields) =>
      updatedChild(crm.updateChild(collection, id, 'addrs', addrId, fields, user()), collection, id),
    removeAddress: (collection: 'people' | 'companies', id: number, addrId: number) =>
      removedChild(crm.removeChild(collection, id, 'addrs', addrId, user()), collection, id),
    liveIds: (collection: CrmCollection): number[] => [...crmRows(collection).rows.keys()],
    deletedIds: (collection: CrmCollection): number[] => [...crmRows(collection).deleted.keys()],
    hooks: (): Rendered[] =>
      [...store.hooks.rows.values()].map((hook) => renderHook(crm.view, hook) as Rendered),
  }

  const reservationControl = {
    get(collection: ReservationCollection, id: number): Rendered | undefined {
      const { view } = reservation
      if (collection === 'contacts') {
        const row = store.contacts.rows.get(id)
        return row && (renderContact(view, row, true) as Rendered)
      }
      const row = store.bookings.rows.get(id)
      return row && (renderBooking(view, row) as Rendered)
    },
    create(collection: ReservationCollection, fields: Fields, options: { userId?: number } = {}): Rendered {
      const row: Stamped =
        collection === 'contacts'
          ? valid(reservation.createContact(fields), 'contact')
          : valid(reservation.createBooking(fields, options.userId ?? state.uiUserId), 'booking')
      return reservationControl.get(collection, row.id) as Rendered
    },
    update(collection: ReservationCollection, id: number, fields: Fields): Rendered {
      if (collection === 'contacts') valid(reservation.updateContact(id, fields), 'contact', id)
      else valid(reservation.updateBooking(id, fields), 'booking', id)
      return reservationControl.get(collection, id) as Rendered
    },
    destroy(collection: ReservationCollection, id: number): void {
      const done = collection === 'contacts' ? reservation.destroyContact(id) : reservation.destroyBooking(id)
      if (!done) throw notFound(collection, id)
    },
    /** Live records; soft-deleted contacts are not live, though still listed. */
    liveIds(collection: ReservationCollection): number[] {
      const rows = [...store[collection].rows.values()]
      return rows.filter((row) => !('deleted_at' in row) || row.deleted_at === null).map((row) => row.id)
    },
    deletedIds: (collection: ReservationCollection): number[] => [...store[collection].deleted.keys()],
  }

  return {
    clock: state.clock,
    faults: (): Faults => structuredClone(state.faults),
    setFaults(patch: FaultsPatch): Faults {
      patchFaults(state.faults, faultsPatchSchema.parse(patch))
      return structuredClone(state.faults)
    },
    resetFaults(): Faults {
      patchFaults(state.faults, noFaults())
      return structuredClone(state.faults)
    },
    behaviour: (): Behaviour => structuredClone(state.behaviour),
    setBehaviour(patch: BehaviourPatch): Behaviour {
      Object.assign(state.behaviour, behaviourPatchSchema.parse(patch))
      return structuredClone(state.behaviour)
    },
    counters: (): Counters => structuredClone(state.holder.counters),
    resetCounters(): void {
      state.holder.counters = zeroCounters()
    },
    /** Resolves when every queued delivery has been attempted, held-back ones included. */
    drainDeliveries: (): Promise<void> => state.deliveries.drain(),
    pendingDeliveries: (): number => state.deliveries.pending,
    /** Adds `count` records of each resource, generated from the seed number (default: the sandbox's). */
    seed(options: { count: SeedCount; seed?: number }): void {
      seedRecords(store, state.ids, {
        count: options.count,
        seed: options.seed ?? state.seed,
        now: nowSeconds(state.clock),
        offsetMinutes: state.offsetMinutes,
      })
    },
    crm: crmControl,
    reservation: reservationControl,
  }
}

const size = z.number().int().min(0)
const seedInput = z.object({
  count: z.union([size, z.partialRecord(z.enum(SEEDED_RESOURCES), size)]),
  seed: z.number().int().optional(),
})

/** The control API over HTTP, under /__sandbox: a path no client of the real services would use. */
export function controlRoutes(control: SandboxControl): Hono {
  const app = new Hono()
  app.onError((error, c) => {
    if (error instanceof SandboxError)
      return c.json({ error: error.message, errors: error.errors }, error.status)
    if (error instanceof z.ZodError)
      return c.json({ error: 'invalid settings', errors: fieldErrors(error) }, 422)
    throw error
  })
  const body = async (c: Context): Promise<Fields> => {
    const parsed: unknown = await c.req.json().catch(() => ({}))
    return isObject(parsed) ? parsed : {}
  }
  const idOf = (c: Context, name = 'id') => {
    const id = idParam(c.req.param(name))
    if (id === null) throw new SandboxError(404, `no such id: ${c.req.param(name)}`)
    return id
  }

  app.get('/faults', (c) => c.json(control.faults()))
  app.patch('/faults', async (c) => c.json(control.setFaults(await body(c))))
  app.delete('/faults', (c) => c.json(control.resetFaults()))
  app.get('/behaviour', (c) => c.json(control.behaviour()))
  app.patch('/behaviour', async (c) => c.json(control.setBehaviour(await body(c))))
  app.get('/counters', (c) => c.json(control.counters()))
  app.delete('/counters', (c) => {
    control.resetCounters()
    return c.json(control.counters())
  })
  app.post('/deliveries/drain', async (c) => {
    await control.drainDeliveries()
    return c.json(control.counters().deliveries)
  })
  app.post('/seed', async (c) => {
    const parsed = seedInput.safeParse(await body(c))
    if (!parsed.success) throw new SandboxError(422, 'expected {"count": n | {"people": n, ...}, "seed"?: n}')
    control.seed(parsed.data)
    return c.json({ seeded: parsed.data.count })
  })

  const crmCollection = (c: Context): CrmCollection => {
    const name = c.req.param('collection')
    const known = ['people', 'companies', 'deals', 'projects', 'tasks']
    if (!name || !known.includes(name)) throw new SandboxError(404, `no CRM collection ${name}`)
    return name as CrmCollection
  }
  const reservationCollection = (c: Context): ReservationCollection => {
    const name = c.req.param('collection')
    if (name !== 'contacts' && name !== 'bookings')
      throw new SandboxError(404, `no reservation collection ${name}`)
    return name
  }
  const truth = (live: number[], deleted: number[]) => ({ live, deleted })

  app.get('/crm/hooks', (c) => c.json(control.crm.hooks()))
  app.get('/crm/:collection', (c) => {
    const collection = crmCollection(c)
    return c.json(truth(control.crm.liveIds(collection), control.crm.deletedIds(collection)))
  })
  app.get('/crm/:collection/:id', (c) => {
    const record = control.crm.get(crmCollection(c), idOf(c))
    if (!record) throw new SandboxError(404, 'no such record')
    return c.json(record)
  })
  app.post('/crm/:collection', async (c) => c.json(control.crm.create(crmCollection(c), await body(c)), 201))
  app.patch('/crm/:collection/:id', async (c) =>
    c.json(control.crm.update(crmCollection(c), idOf(c), await body(c))),
  )
  app.delete('/crm/:collection/:id', (c) => {
    control.crm.destroy(crmCollection(c), idOf(c))
    return c.body(null, 204)
  })
  for (const child of ['tags', 'addrs'] as ChildName[]) {
    const path = `/crm/:collection/:id/${child}`
    const contactCollection = (c: Context) => {
      const collection = crmCollection(c)
      if (collection !== 'people' && collection !== 'companies')
        throw new SandboxError(404, 'no addresses here')
      return collection
    }
    app.post(path, async (c) => {
      const fields = await body(c)
      const added =
        child === 'tags'
          ? control.crm.addTag(crmCollection(c), idOf(c), String(fields.name ?? ''))
          : control.crm.addAddress(contactCollection(c), idOf(c), fields)
      return c.json(added, 201)
    })
    app.patch(`${path}/:childId`, async (c) => {
      const fields = await body(c)
      if (child === 'tags')
        control.crm.renameTag(crmCollection(c), idOf(c), idOf(c, 'childId'), String(fields.name))
      else control.crm.updateAddress(contactCollection(c), idOf(c), idOf(c, 'childId'), fields)
      return c.body(null, 204)
    })
    app.delete(`${path}/:childId`, (c) => {
      if (child === 'tags') control.crm.removeTag(crmCollection(c), idOf(c), idOf(c, 'childId'))
      else control.crm.removeAddress(contactCollection(c), idOf(c), idOf(c, 'childId'))
      return c.body(null, 204)
    })
  }

  app.get('/reservation/:collection', (c) => {
    const collection = reservationCollection(c)
    return c.json(truth(control.reservation.liveIds(collection), control.reservation.deletedIds(collection)))
  })
  app.get('/reservation/:collection/:id', (c) => {
    const record = control.reservation.get(reservationCollection(c), idOf(c))
    if (!record) throw new SandboxError(404, 'no such record')
    return c.json(record)
  })
  app.post('/reservation/:collection', async (c) =>
    c.json(control.reservation.create(reservationCollection(c), await body(c)), 201),
  )
  app.patch('/reservation/:collection/:id', async (c) =>
    c.json(control.reservation.update(reservationCollection(c), idOf(c), await body(c))),
  )
  app.delete('/reservation/:collection/:id', (c) => {
    control.reservation.destroy(reservationCollection(c), idOf(c))
    return c.body(null, 204)
  })
  return app
}
