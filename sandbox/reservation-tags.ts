// Tags and webforms of the reservation account, and the tags of its contacts. The document routes them
// but shows none of their fields or behaviour. Here a tag is `{id, account_id, name, created_at,
// updated_at}`, a webform `{id, account_id, name, active, area_id, token, created_at, updated_at}`, and
// `include_tags=true` adds `tags: [{id, name}]` to a contact. At its least helpful: renaming or
// deleting a tag changes the tags of its contacts without touching them, and tagging or untagging a
// contact touches its `updated_at` only with `childChangesTouchParent`.
import { z } from 'zod'
import { type Clock, nowSeconds } from './clock.ts'
import { type Behaviour, bump, type Counters } from './faults.ts'
import type { Ids } from './ids.ts'
import { assignGiven, flag, invalid, type Outcome, optionalId, required } from './kind.ts'
import type { ContactRow, ReservationTagRow, WebformRow } from './reservation-rows.ts'
import type { Generation } from './seeding.ts'
import { changed, insert, link, remove, type Store, unlink } from './store.ts'
import type { View } from './view.ts'

const tagInput = z.object({ name: required(100) })
const webformCreate = z.object({ name: required(100), active: flag.optional(), area_id: optionalId })
const webformUpdate = webformCreate.partial()

export function renderTag(view: View, row: ReservationTagRow): Record<string, unknown> {
  return {
    id: row.id,
    account_id: view.accountId,
    name: row.name,
    created_at: view.time(row.created_at),
    updated_at: view.time(row.updated_at),
  }
}

export function renderWebform(view: View, row: WebformRow): Record<string, unknown> {
  return {
    id: row.id,
    account_id: view.accountId,
    name: row.name,
    active: row.active,
    area_id: row.area_id,
    token: row.token,
    created_at: view.time(row.created_at),
    updated_at: view.time(row.updated_at),
  }
}

/** A contact's tags as `include_tags=true` shows them, in the order they were added. */
export function tagsOfContact(store: Store, contactId: number): { id: number; name: string }[] {
  return [...(store.tagsOfContact.get(contactId) ?? [])].flatMap((tagId) => {
    const tag = store.tags.rows.get(tagId)
    return tag ? [{ id: tag.id, name: tag.name }] : []
  })
}

/** Forgets the tags of a contact that is gone. */
export function untagAll(store: Store, contactId: number): void {
  for (const tagId of store.tagsOfContact.get(contactId) ?? []) unlink(store.contactsOfTag, tagId, contactId)
  store.tagsOfContact.delete(contactId)
}

function tag(store: Store, contactId: number, tagId: number): void {
  link(store.tagsOfContact, contactId, tagId)
  link(store.contactsOfTag, tagId, contactId)
}

const token = (id: number) => (id * 2_654_435_761).toString(16).slice(-12).padStart(12, '0')

/** What the operations use of the account's dependencies (reservation-account.ts). */
export interface TagOperationDeps {
  store: Store
  ids: Ids
  clock: Clock
  behaviour(): Behaviour
  counters(): Counters
}

/** What the account does with tags, webforms and the tags of contacts. */
export function tagOperations(deps: TagOperationDeps) {
  const { store } = deps
  const count = (event: string) => bump(deps.counters().changes, event)
  const now = () => nowSeconds(deps.clock)
  const live = (contactId: number): ContactRow | undefined => {
    const contact = store.contacts.rows.get(contactId)
    return contact?.deleted_at === null ? contact : undefined
  }
  const touch = (contact: ContactRow) => {
    if (!deps.behaviour().childChangesTouchParent) return
    contact.updated_at = now()
    changed(store.contacts)
  }

  return {
    createTag(input: unknown): Outcome<ReservationTagRow> {
      const parsed = tagInput.safeParse(input)
      if (!parsed.success) return invalid(parsed.error, input)
      const at = now()
      const row = insert(store.tags, {
        id: deps.ids.next('reservation_tag'),
        name: parsed.data.name,
        created_at: at,
        updated_at: at,
      })
      count('tag.create')
      return { ok: true, row }
    },

    /** A rename shows in every contact carrying the tag; their `updated_at` stays. */
    updateTag(tagId: number, input: unknown): Outcome<ReservationTagRow> | null {
      const row = store.tags.rows.get(tagId)
      if (!row) return null
      const parsed = tagInput.partial().safeParse(input)
      if (!parsed.success) return invalid(parsed.error, input)
      assignGiven(row, parsed.data)
      row.updated_at = now()
      changed(store.tags)
      count('tag.update')
      return { ok: true, row }
    },

    /** Gone from every contact carrying it, their `updated_at` untouched. */
    destroyTag(tagId: number): boolean {
      if (!store.tags.rows.has(tagId)) return false
      remove(store.tags, tagId, now())
      for (const contactId of store.contactsOfTag.get(tagId) ?? [])
        unlink(store.tagsOfContact, contactId, tagId)
      store.contactsOfTag.delete(tagId)
      count('tag.destroy')
      return true
    },

    /** Null when there is no such live contact. */
    tagContact(contactId: number, tagId: number): Outcome<ContactRow> | null {
      const contact = live(contactId)
      if (!contact) return null
      if (!store.tags.rows.has(tagId)) return invalid({ tag_id: ['does not exist'] })
      if (!store.tagsOfContact.get(contactId)?.has(tagId)) {
        tag(store, contactId, tagId)
        touch(contact)
        count('contact.tag')
      }
      return { ok: true, row: contact }
    },

    /** False when the contact does not carry the tag. */
    untagContact(contactId: number, tagId: number): boolean {
      const contact = live(contactId)
      if (!contact || !store.tagsOfContact.get(contactId)?.has(tagId)) return false
      unlink(store.tagsOfContact, contactId, tagId)
      unlink(store.contactsOfTag, tagId, contactId)
      touch(contact)
      count('contact.untag')
      return true
    },

    createWebform(input: unknown): Outcome<WebformRow> {
      const parsed = webformCreate.safeParse(input)
      if (!parsed.success) return invalid(parsed.error, input)
      const at = now()
      const id = deps.ids.next('webform')
      const row = insert(store.webforms, {
        id,
        name: parsed.data.name,
        active: parsed.data.active ?? true,
        area_id: parsed.data.area_id ?? null,
        token: token(id),
        created_at: at,
        updated_at: at,
      })
      count('webform.create')
      return { ok: true, row }
    },

    updateWebform(webformId: number, input: unknown): Outcome<WebformRow> | null {
      const row = store.webforms.rows.get(webformId)
      if (!row) return null
      const parsed = webformUpdate.safeParse(input)
      if (!parsed.success) return invalid(parsed.error, input)
      assignGiven(row, parsed.data)
      row.updated_at = now()
      changed(store.webforms)
      count('webform.update')
      return { ok: true, row }
    },

    destroyWebform(webformId: number): boolean {
      if (!store.webforms.rows.has(webformId)) return false
      remove(store.webforms, webformId, now())
      count('webform.destroy')
      return true
    },
  }
}

const TAG_NAMES = ['Stammgast', 'VIP', 'Allergie', 'Geburtstag', 'Firmenkunde', 'Presse', 'Vegetarisch']
const WEBFORM_NAMES = ['Website', 'Terrasse', 'Mittagstisch', 'Gruppen', 'Weihnachtsfeier']

/** `count('tags')` tags, and on four contacts in ten one to three of all the tags there are. */
export function seedTags({ store, ids, random, time, count }: Generation): void {
  for (let i = 0; i < count('tags'); i++) {
    const round = Math.floor(i / TAG_NAMES.length)
    const name = `${TAG_NAMES[i % TAG_NAMES.length]}${round ? ` ${round + 1}` : ''}`
    const created_at = time.created()
    insert(store.tags, {
      id: ids.next('reservation_tag'),
      name,
      created_at,
      updated_at: time.updated(created_at),
    })
  }
  const tagIds = [...store.tags.rows.keys()]
  if (!count('tags') || !tagIds.length) return
  for (const contact of store.contacts.rows.values()) {
    if (contact.deleted_at !== null || !random.chance(0.4)) continue
    for (let k = random.int(1, 3); k > 0; k--) tag(store, contact.id, random.pick(tagIds))
  }
}

export function seedWebforms({ store, ids, random, time, count }: Generation): void {
  for (let i = 0; i < count('webforms'); i++) {
    const round = Math.floor(i / WEBFORM_NAMES.length)
    const created_at = time.created()
    const id = ids.next('webform')
    insert(store.webforms, {
      id,
      name: `${WEBFORM_NAMES[i % WEBFORM_NAMES.length]}${round ? ` ${round + 1}` : ''}`,
      active: random.chance(0.8),
      area_id: random.chance(0.5) ? 14 + random.int(0, 20) : null,
      token: token(id),
      created_at,
      updated_at: time.updated(created_at),
    })
  }
}
