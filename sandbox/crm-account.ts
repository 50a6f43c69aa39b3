// Changes to the CRM account, whoever makes them (an API client or the control API playing a user
// of the upstream's UI): validation, timestamps, cascades, the webhooks every change fires, and the
// activity each logs (activities.ts).

import { logActivity } from './activities.ts'
import { renderAddr, renderTag } from './child-views.ts'
import { addrInput, mergeAddrs, mergeTags, tagInput } from './children.ts'
import { type Clock, nowSeconds } from './clock.ts'
import type { DeliveryQueue } from './deliveries.ts'
import type { Behaviour, Counters, TouchSetting } from './faults.ts'
import { bump } from './faults.ts'
import { publish } from './hooks.ts'
import { type FieldErrors, fieldErrors } from './http.ts'
import type { Ids } from './ids.ts'
import { type Actor, type Kind, type Outcome, parseIncludes, type WriteContext } from './kind.ts'
import { crmKinds } from './kinds.ts'
import { type Mergeable, mergeInto } from './merges.ts'
import { linkReferences, relinking, unlinkReferences } from './relations.ts'
import type { AddrRow, Plural, Reachable, Stamped, Tagged, TagRow, WorkRow } from './rows.ts'
import { changed, insert, remove, type Store } from './store.ts'
import type { View } from './view.ts'
import { changeState } from './work.ts'

const { people, companies, deals, projects } = crmKinds
const kindOf = (plural: Plural): Kind => crmKinds[plural]

export type ChildName = 'tags' | 'addrs'
export type ChildOutcome = { ok: true; child: TagRow | AddrRow } | { ok: false; errors: FieldErrors }

export interface CrmAccountDeps {
  store: Store
  ids: Ids
  clock: Clock
  view: View
  behaviour(): Behaviour
  counters(): Counters
  deliveries: DeliveryQueue
}

export type CrmAccount = ReturnType<typeof createCrmAccount>

export function createCrmAccount(deps: CrmAccountDeps) {
  const { store, view } = deps
  const context = (actor: Actor): WriteContext => ({
    store,
    ids: deps.ids,
    now: nowSeconds(deps.clock),
    actor,
  })

  function emit(
    kind: Kind,
    event: 'create' | 'update' | 'destroy',
    row: Stamped,
    actor: Actor,
    before?: object,
  ): void {
    bump(deps.counters().changes, `${kind.wrapper}.${event}`)
    const now = nowSeconds(deps.clock)
    logActivity(store, deps.ids, { plural: kind.plural, verb: event, row, before, actor, now })
    if (!kind.model) return
    publish(store, deps.deliveries, {
      model: kind.model,
      event,
      id: row.id,
      wrapper: kind.wrapper,
      render: (includes) => kind.render(view, row, parseIncludes(includes, kind.includeOptions, /[\s,]+/)),
      flat: () => kind.flat(view, row),
    })
  }

  /** A sub-object changed. Whether that bumps the parent and fires its update is a behaviour knob. */
  function touch(kind: Kind, row: Stamped, actor: Actor, now: number, setting?: TouchSetting): void {
    changed(kind.rows(store))
    if (!deps.behaviour()[setting ?? 'childChangesTouchParent']) return
    row.updated_at = now
    if ('updated_by_user_id' in row) row.updated_by_user_id = actor.userId
    emit(kind, 'update', row, actor)
  }

  /** Changes a record that refers to a destroyed one, as a sub-object change of its own. */
  function detach<R extends Stamped>(kind: Kind<R>, ids: Set<number> | undefined, change: (row: R) => void) {
    return (actor: Actor, now: number) => {
      for (const id of [...(ids ?? [])]) {
        const row = kind.rows(store).rows.get(id)
        if (!row) continue
        relinking(store, kind.plural, row, () => change(row))
        touch(kind, row, actor, now)
      }
    }
  }

  /**
   * Dependants of a destroyed record: its tasks go, and so do the notes linked to it (whatever else
   * they are linked to: the worst the upstream plausibly does), silently; references to it are removed.
   */
  function cascade(kind: Kind, id: number, actor: Actor, now: number): void {
    if (kind.attachableType) {
      for (const taskId of store.tasksOf[kind.attachableType].get(id) ?? []) remove(store.tasks, taskId, now)
      store.tasksOf[kind.attachableType].delete(id)
      for (const noteId of [...(store.notesOf[kind.attachableType].get(id) ?? [])]) {
        const note = store.protocols.rows.get(noteId)
        if (!note) continue
        unlinkReferences(store, 'protocols', note)
        remove(store.protocols, noteId, now)
      }
    }
    const withoutPerson = (row: WorkRow) => {
      row.person_ids = row.person_ids?.filter((personId) => personId !== id)
    }
    const withoutCompany = (row: WorkRow) => {
      row.company_id = null
    }
    if (kind === people) {
      detach(deals, store.dealsOfPerson.get(id), withoutPerson)(actor, now)
      detach(projects, store.projectsOfPerson.get(id), withoutPerson)(actor, now)
    }
    if (kind === companies) {
      detach(people, store.staff.get(id), (person) => {
        person.positions = person.positions?.filter((position) => position.company_id !== id)
      })(actor, now)
      detach(deals, store.dealsOfCompany.get(id), withoutCompany)(actor, now)
      detach(projects, store.projectsOfCompany.get(id), withoutCompany)(actor, now)
    }
  }

  /** The record that holds a sub-object; only people and companies have addresses. */
  function parent(
    plural: Plural,
    id: number,
    child: ChildName,
  ): { kind: Kind; row: Stamped & Reachable } | null {
    const kind = kindOf(plural)
    if (!kind.attachableType || (child === 'addrs' && kind !== people && kind !== companies)) return null
    const row = kind.rows(store).rows.get(id)
    return row ? { kind, row } : null
  }

  return {
    view,
    kinds: crmKinds as { [P in Plural]: Kind },

    create(plural: Plural, input: unknown, actor: Actor): Outcome<Stamped> {
      const kind = kindOf(plural)
      const limit = deps.behaviour().maxPeople
      if (kind === people && limit !== null && store.people.rows.size >= limit) {
        return { ok: false, status: 507, errors: { base: ['no contact storage left'] } }
      }
      const outcome = kind.create(input, context(actor))
      if (!outcome.ok) return outcome
      insert(kind.rows(store), outcome.row)
      linkReferences(store, plural, outcome.row)
      emit(kind, 'create', outcome.row, actor)
      return outcome
    },

    /** Null when there is no such record. */
    update(plural: Plural, id: number, input: unknown, actor: Actor): Outcome<Stamped> | null {
      const kind = kindOf(plural)
      const row = kind.rows(store).rows.get(id)
      if (!row) return null
      const before = { ...row }
      const outcome = relinking(store, plural, row, () => kind.update(row, input, context(actor)))
      if (!outcome.ok) return outcome
      changed(kind.rows(store))
      emit(kind, 'update', row, actor, before)
      return outcome
    },

    destroy(plural: Plural, id: number, actor: Actor): boolean {
      const kind = kindOf(plural)
      const row = kind.rows(store).rows.get(id)
      if (!row) return false
      const now = nowSeconds(deps.clock)
      emit(kind, 'destroy', row, actor)
      remove(kind.rows(store), id, now)
      unlinkReferences(store, plural, row)
      cascade(kind, id, actor, now)
      return true
    },

    /**
     * Merges the losers into the record `id` (merges.ts): they vanish silently, what was theirs moves
     * without a trace, and the winner changes as any record does. Null when the winner or a loser does
     * not exist; field errors when there is no loser, or the winner is among them.
     */
    merge(plural: Mergeable, id: number, loserIds: readonly number[], actor: Actor): Outcome<Stamped> | null {
      const kind = kindOf(plural)
      const rows = kind.rows(store).rows
      const winner = rows.get(id)
      if (!winner || loserIds.some((loserId) => !rows.has(loserId))) return null
      if (loserIds.length === 0) return { ok: false, errors: { looser_ids: ["can't be blank"] } }
      if (loserIds.includes(id))
        return { ok: false, errors: { looser_ids: ['must not include the record itself'] } }
      const before = { ...winner }
      const now = nowSeconds(deps.clock)
      for (const loserId of new Set(loserIds)) mergeInto(store, plural, winner, loserId, now)
      winner.updated_at = now
      if ('updated_by_user_id' in winner) winner.updated_by_user_id = actor.userId
      changed(kind.rows(store))
      emit(kind, 'update', winner, actor, before)
      return { ok: true, row: winner }
    },

    /**
     * `change_status` of a deal or project: its state and `finished_at` (work.ts). By default nothing
     * else: no `updated_at`, no webhook, no activity; `statusChangesTouchRecord` makes it an update like
     * any other. Null when there is no such record.
     */
    changeStatus(
      plural: 'deals' | 'projects',
      id: number,
      state: unknown,
      actor: Actor,
    ): Outcome<Stamped> | null {
      const kind = kindOf(plural)
      const row = store[plural].rows.get(id)
      if (!row) return null
      const before = { ...row }
      const now = nowSeconds(deps.clock)
      const errors = changeState(plural, row, state, now)
      if (errors) return { ok: false, errors }
      changed(kind.rows(store))
      if (!deps.behaviour().statusChangesTouchRecord || row.current_state === before.current_state)
        return { ok: true, row }
      row.updated_at = now
      row.updated_by_user_id = actor.userId
      emit(kind, 'update', row, actor, before)
      return { ok: true, row }
    },

    /** The sub-objects of a record, rendered; null when there is no such record. */
    children(plural: Plural, id: number, child: ChildName): Record<string, unknown>[] | null {
      const found = parent(plural, id, child)
      if (!found?.kind.attachableType) return null
      const owner = { id, type: found.kind.attachableType }
      const attachable = found.kind.render(view, found.row, new Set())
      if (child === 'tags') {
        return (found.row.tags ?? []).map((tag) => ({ ...renderTag(view, tag, owner), attachable }))
      }
      return (found.row.addrs ?? []).map((addr) => renderAddr(view, addr, owner))
    },

    renderChild(plural: Plural, id: number, child: TagRow | AddrRow): Record<string, unknown> {
      const type = kindOf(plural).attachableType ?? 'Person'
      return 'name' in child ? renderTag(view, child, { id, type }) : renderAddr(view, child, { id, type })
    },

    addChild(
      plural: Plural,
      id: number,
      child: ChildName,
      input: unknown,
      actor: Actor,
    ): ChildOutcome | null {
      const found = parent(plural, id, child)
      if (!found) return null
      const write = context(actor)
      let added: TagRow | AddrRow | undefined
      if (child === 'tags') {
        const parsed = tagInput.safeParse(input)
        if (!parsed.success) return { ok: false, errors: fieldErrors(parsed.error, input) }
        added = mergeTags(found.row as Tagged, [{ name: parsed.data.name }], write)[0]
        if (!added) return { ok: false, errors: { name: ['has already been taken'] } }
      } else {
        const parsed = addrInput.safeParse(input)
        if (!parsed.success) return { ok: false, errors: fieldErrors(parsed.error, input) }
        added = mergeAddrs(found.row, [{ ...parsed.data, id: undefined }], write)[0]
      }
      if (!added) return null
      touch(found.kind, found.row, actor, write.now)
      return { ok: true, child: added }
    },

    updateChild(
      plural: Plural,
      id: number,
      child: ChildName,
      childId: number,
      input: unknown,
      actor: Actor,
    ): ChildOutcome | null {
      const found = parent(plural, id, child)
      const existing =
        found && (child === 'tags' ? found.row.tags : found.row.addrs)?.find((c) => c.id === childId)
      if (!found || !existing) return null
      const write = context(actor)
      if (child === 'tags') {
        const parsed = tagInput.safeParse(input)
        if (!parsed.success) return { ok: false, errors: fieldErrors(parsed.error, input) }
        mergeTags(found.row, [{ id: childId, name: parsed.data.name }], write)
      } else {
        const parsed = addrInput.partial().safeParse(input)
        if (!parsed.success) return { ok: false, errors: fieldErrors(parsed.error, input) }
        mergeAddrs(found.row, [{ ...parsed.data, id: childId }], write)
      }
      touch(found.kind, found.row, actor, write.now)
      return { ok: true, child: existing }
    },

    /**
     * A change to the avatar or the connections of a person or company (or, under `setting`, a
     * person's historic events and assistants), as a sub-object change (see `touch`): `change` edits
     * the row and returns what it changed, or null when it changed nothing. Null when there is no such
     * record.
     */
    changeContact<T>(
      plural: Plural,
      id: number,
      change: (row: Reachable, write: WriteContext) => T | null,
      actor: Actor,
      setting?: TouchSetting,
    ): { changed: T | null } | null {
      const kind = kindOf(plural)
      const row: (Stamped & Reachable) | undefined =
        plural === 'people' || plural === 'companies' ? store[plural].rows.get(id) : undefined
      if (!row) return null
      const write = context(actor)
      const changed = change(row, write)
      if (changed !== null) touch(kind, row, actor, write.now, setting)
      return { changed }
    },

    /** Null when the record or the sub-object does not exist. */
    removeChild(plural: Plural, id: number, child: ChildName, childId: number, actor: Actor): true | null {
      const found = parent(plural, id, child)
      if (!found) return null
      const list: { id: number }[] | undefined = child === 'tags' ? found.row.tags : found.row.addrs
      const index = list?.findIndex((c) => c.id === childId) ?? -1
      if (!list || index < 0) return null
      list.splice(index, 1)
      touch(found.kind, found.row, actor, nowSeconds(deps.clock))
      return true
    },
  }
}
