// Driving the sandbox: fault and behaviour settings, counters, waiting for deliveries, seeding,
// and changes made as a user of the upstream's own UI would make them (they fire webhooks and
// spend no rate limit). In-process for tests; over HTTP under /__sandbox (control-routes.ts).
import {
  type AvatarInput,
  addConnection,
  type ConnectionChange,
  type ConnectionInput,
  removeConnection,
  setAvatar,
  updateConnection,
} from './avatars-connections.ts'
import { renderAvatar, renderConnection } from './child-views.ts'
import { nowSeconds } from './clock.ts'
import { SandboxError } from './control-errors.ts'
import { personDetailsControl } from './control-person-details.ts'
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
import { membersOf, PLURAL_OF } from './filter-groups.ts'
import { renderHook } from './hooks.ts'
import type { Actor, Outcome, WriteContext } from './kind.ts'
import { type ReservationKind, reservationKinds } from './reservation-kinds.ts'
import type { ReservationCollection } from './reservation-rows.ts'
import type { Plural, Reachable, Stamped } from './rows.ts'
import { type SeedCount, seedRecords } from './seed.ts'
import type { SandboxState } from './state.ts'
import {
  type UndocumentedPaging,
  type UndocumentedPagingPatch,
  undocumentedPagingPatchSchema,
} from './undocumented-paging.ts'

export { SandboxError } from './control-errors.ts'
export type CrmCollection = Plural
export type { ReservationCollection } from './reservation-rows.ts'
export type Fields = Record<string, unknown>
/** A record, tag or address as the API shows it. */
export type SandboxRecord = { id: number; [key: string]: unknown }
type Rendered = SandboxRecord

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
  type Contacts = 'people' | 'companies'
  const owner = (collection: Contacts, id: number) => ({
    id,
    type: collection === 'people' ? ('Person' as const) : ('Company' as const),
  })
  /** A change to a contact's avatar or connections; what it changed, or 404 when `missing` it found nothing. */
  const contactChange = <T>(
    collection: Contacts,
    id: number,
    change: (row: Reachable, write: WriteContext) => T | null,
    missing?: string,
  ): T | null => {
    const outcome = crm.changeContact(collection, id, change, user())
    if (!outcome) throw notFound(collection, id)
    if (outcome.changed === null && missing) throw new SandboxError(404, missing)
    return outcome.changed
  }
  const connectionAt = (collection: Contacts, id: number, position: number) =>
    `no connection at ${position} of ${collection} ${id}`

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
    /**
     * A merge as a user of the UI makes it (`POST /api/<people|companies>/{id}/merge?looser_ids=…`): the
     * losers vanish without a webhook, their tasks, notes and memberships move to the winner without
     * touching those records' `updated_at`, and the winner changes (with its webhook). The winner.
     */
    merge(
      collection: Contacts,
      id: number,
      loserIds: readonly number[],
      options: { userId?: number } = {},
    ): Rendered {
      valid(crm.merge(collection, id, loserIds, user(options.userId)), collection, id)
      return crmControl.get(collection, id) as Rendered
    },
    /**
     * `change_status` of a deal or project as a user of the UI: its `current_state` and `finished_at`
     * change; its `updated_at` and webhook only with `statusChangesTouchRecord`. The record.
     */
    changeStatus(
      collection: 'deals' | 'projects',
      id: number,
      state: string,
      options: { userId?: number } = {},
    ): Rendered {
      valid(crm.changeStatus(collection, id, state, user(options.userId)), collection, id)
      return crmControl.get(collection, id) as Rendered
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
    /**
     * A new avatar uploaded for a person or company (null: removed): the include as the API shows it.
     * Like tags and addresses, a sub-object: its parent's `updated_at` and webhook follow
     * `childChangesTouchParent`.
     */
    setAvatar(collection: Contacts, id: number, avatar: AvatarInput | null): Rendered | null {
      const set = contactChange(collection, id, (row, write) => ({ avatar: setAvatar(row, avatar, write) }))
      return set?.avatar ? (renderAvatar(crm.view, set.avatar, owner(collection, id)) as Rendered) : null
    },
    /** A connection added at the end of a person's or company's (422 when it links to no live record). */
    addConnection(collection: Contacts, id: number, connection: ConnectionInput): Record<string, unknown> {
      const added = contactChange(collection, id, (row, write) => addConnection(row, connection, write))
      if (!added) throw new SandboxError(422, 'invalid connection', { connectable_id: ['is invalid'] })
      return renderConnection(crm.view, added, owner(collection, id))
    },
    /** The connection at `position` (0, 1, ... as the include lists them) changed in place. */
    updateConnection(collection: Contacts, id: number, position: number, change: ConnectionChange): void {
      const missing = connectionAt(collection, id, position)
      contactChange(collection, id, (row, write) => updateConnection(row, position, change, write), missing)
    },
    removeConnection(collection: Contacts, id: number, position: number): void {
      const missing = connectionAt(collection, id, position)
      contactChange(collection, id, (row) => removeConnection(row, position), missing)
    },
    /** A filter group's members now: their collection and ids in id order, or undefined. */
    filterGroupMembers(id: number): { collection: CrmCollection; ids: number[] } | undefined {
      const group = store.filter_groups.rows.get(id)
      if (!group) return undefined
      const ids = membersOf(store, group).map((row) => row.id)
      return { collection: PLURAL_OF[group.model_type], ids }
    },
    ...personDetailsControl(state, user),
    liveIds: (collection: CrmCollection): number[] => [...crmRows(collection).rows.keys()],
    deletedIds: (collection: CrmCollection): number[] => [...crmRows(collection).deleted.keys()],
    hooks: (): Rendered[] =>
      [...store.hooks.rows.values()].map((hook) => renderHook(crm.view, hook) as Rendered),
  }

  const reservationControl = {
    get(collection: ReservationCollection, id: number): Rendered | undefined {
      const kind = reservationKinds[collection] as ReservationKind
      const row = kind.rows(store).rows.get(id)
      return row && (kind.render(reservation.view, row) as Rendered)
    },
    /** Bookings are made by a user of the UI (`userId`, default the UI's user); nothing else has one. */
    create(collection: ReservationCollection, fields: Fields, options: { userId?: number } = {}): Rendered {
      const kind = reservationKinds[collection] as ReservationKind
      const row: Stamped = valid(
        kind.create(reservation, fields, options.userId ?? state.uiUserId),
        kind.singular,
      )
      return reservationControl.get(collection, row.id) as Rendered
    },
    update(collection: ReservationCollection, id: number, fields: Fields): Rendered {
      const kind = reservationKinds[collection] as ReservationKind
      valid(kind.update(reservation, id, fields), kind.singular, id)
      return reservationControl.get(collection, id) as Rendered
    },
    destroy(collection: ReservationCollection, id: number): void {
      if (!reservationKinds[collection].destroy(reservation, id)) throw notFound(collection, id)
    },
    /** Live records; soft-deleted contacts are not live, though still listed. */
    liveIds(collection: ReservationCollection): number[] {
      const rows: Stamped[] = [...reservationKinds[collection].rows(store).rows.values()]
      return rows.filter((row) => !('deleted_at' in row) || row.deleted_at === null).map((row) => row.id)
    },
    deletedIds: (collection: ReservationCollection): number[] => [
      ...reservationKinds[collection].rows(store).deleted.keys(),
    ],
    /** Tags a live contact; the contact as the control API shows it. */
    tagContact(contactId: number, tagId: number): Rendered {
      valid(reservation.tagContact(contactId, tagId), 'contact', contactId)
      return reservationControl.get('contacts', contactId) as Rendered
    },
    untagContact(contactId: number, tagId: number): void {
      if (!reservation.untagContact(contactId, tagId)) throw notFound(`tag of contact ${contactId}`, tagId)
    },
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
    undocumentedPaging: (): UndocumentedPaging => structuredClone(state.undocumentedPaging),
    setUndocumentedPaging(patch: UndocumentedPagingPatch): UndocumentedPaging {
      Object.assign(state.undocumentedPaging, undocumentedPagingPatchSchema.parse(patch))
      return structuredClone(state.undocumentedPaging)
    },
    counters: (): Counters => structuredClone(state.holder.counters),
    resetCounters(): void {
      state.holder.counters = zeroCounters()
    },
    /** Resolves when every queued delivery has been attempted, held-back ones included. */
    drainDeliveries: (): Promise<void> => state.deliveries.drain(),
    pendingDeliveries: (): number => state.deliveries.pending,
    /** Adds `count` records of each resource, generated from the seed number (default: the sandbox's). */
    seed(options: {
      count: SeedCount
      seed?: number
      ties?: number
      attachmentBytes?: { min: number; max: number }
    }): void {
      seedRecords(store, state.ids, {
        count: options.count,
        ties: options.ties,
        attachmentBytes: options.attachmentBytes,
        seed: options.seed ?? state.seed,
        now: nowSeconds(state.clock),
        offsetMinutes: state.offsetMinutes,
      })
    },
    crm: crmControl,
    reservation: reservationControl,
  }
}
