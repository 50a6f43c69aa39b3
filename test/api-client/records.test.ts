// Tolerant record schemas: everything the real services send passes, kept as sent; only a record
// without an id or with an unparsable updated_at is rejected, by an error naming resource, id and field.
import nock from 'nock'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { RejectedRecordError } from '../../src/api-client/errors.ts'
import { type Drift, parseRecord, parseRecords, unwrap } from '../../src/api-client/records.ts'
import { coerce } from '../../src/resources/columns.ts'
import { users } from '../../src/resources/crm.ts'
import {
  bookings,
  contacts,
  deals,
  hasTextId,
  hasUpdatedAt,
  people,
  type Resource,
  resources,
} from '../../src/resources/index.ts'
import { CRM_URL, crmClient, useNock, useTestDatabase } from './harness.ts'

const realPerson = {
  id: 30016185,
  account_id: 87444,
  user_id: null,
  country_code: 'de',
  salutation: 'Frau',
  title: 'Dr. Dr.',
  gender: 'female_user',
  first_name: 'Maxi',
  name: 'Mustermann',
  background: '...',
  created_by_user_id: 117760,
  updated_by_user_id: 158291,
  created_at: '2022-11-29T13:25:56.000+01:00',
  updated_at: '2022-12-14T15:53:43.000+01:00',
  tags: [{ id: 120484083, attachable_id: 30016185, api_input: true, name: 'NEW-FANCY-TAG' }],
  addrs: [{ id: 28752100, street: '', city: 'Leipzig', state_code: 'SN', primary: null, atype: 'work_hq' }],
}

function rejection(run: () => unknown): RejectedRecordError {
  try {
    run()
  } catch (error) {
    if (error instanceof RejectedRecordError) return error
    throw error
  }
  throw new Error('expected a RejectedRecordError')
}

describe('record schemas', () => {
  it('keep a real person exactly as sent, unknown keys and includes included', () => {
    expect(parseRecord(people, structuredClone(realPerson))).toEqual(realPerson)
  })

  it('accept gender as a string or an integer', () => {
    const drifts: Drift[] = []
    for (const gender of ['female_user', 2, null]) {
      expect(parseRecord(people, { ...realPerson, gender }, (d) => drifts.push(d)).gender).toBe(gender)
    }
    expect(drifts).toEqual([])
  })

  it('accept decimals as strings and a target date as YYYY-MM-DD', () => {
    const deal = {
      id: 7,
      value: '1200.50',
      value_count: '3.0',
      value_type: 'Monatlich',
      target_date: '2024-06-30',
      updated_at: '2024-05-01T10:00:00.000+02:00',
    }
    const drifts: Drift[] = []
    expect(parseRecord(deals, deal, (d) => drifts.push(d))).toEqual(deal)
    expect(drifts).toEqual([])
  })

  it("accept a contact's newsletter as false, its own deleted_at, and nulls in every optional field", () => {
    const contact = {
      id: 187,
      account_id: 8,
      title: null,
      first: null,
      last: 'Gast',
      newsletter: false,
      completed_bookings_count: 0,
      deleted_at: null,
      created_at: '2011-06-15T09:41:58.000+02:00',
      updated_at: '2011-06-15T09:41:58.000+02:00',
    }
    const drifts: Drift[] = []
    expect(parseRecord(contacts, contact, (d) => drifts.push(d))).toEqual(contact)
    expect(drifts).toEqual([])
  })

  it('accept timestamps with an offset or with Z', () => {
    for (const updatedAt of [
      '2022-12-14T15:53:43.000+01:00',
      '2022-12-14T14:53:43Z',
      '2022-12-14T14:53:43.000Z',
    ]) {
      expect(parseRecord(people, { id: 1, updated_at: updatedAt }).updated_at).toBe(updatedAt)
    }
  })

  it('accept an id sent as a digit string, as a number', () => {
    expect(parseRecord(people, { id: '30016185', updated_at: '2022-12-14T14:53:43Z' }).id).toBe(30016185)
  })

  it('accept users, which have no updated_at', () => {
    expect(parseRecord(users, { id: 117760, first: 'Maxi', name: 'M', login: 'm@example.com' }).id).toBe(
      117760,
    )
  })

  it('reject a record without an id, naming the resource and the field', () => {
    const error = rejection(() => parseRecord(people, { name: 'Nobody', updated_at: '2022-12-14T14:53:43Z' }))
    expect(error).toMatchObject({ resource: 'crm.people', id: null, field: 'id' })
    expect(error.message).toBe('crm.people (no id): id is missing, not an id')
  })

  it('reject an unparsable or missing updated_at, naming the resource, the id and the field', () => {
    const bad = rejection(() => parseRecord(bookings, { id: 222, updated_at: 'yesterday' }))
    expect(bad).toMatchObject({ resource: 'reservations.bookings', id: 222, field: 'updated_at' })
    expect(bad.message).toBe('reservations.bookings 222: updated_at is "yesterday", not a timestamp')
    expect(rejection(() => parseRecord(people, { id: 5 })).message).toBe(
      'crm.people 5: updated_at is missing, not a timestamp',
    )
    expect(rejection(() => parseRecord(people, { id: 6, updated_at: '2022-13-45T10:00:00Z' })).field).toBe(
      'updated_at',
    )
  })

  it('reject an id nested too deep to show, or far too long, with a message of bounded length', () => {
    let deep: unknown = 1
    for (let i = 0; i < 20_000; i++) deep = [deep]
    expect(
      rejection(() => parseRecord(people, { id: deep, updated_at: '2022-12-14T14:53:43Z' })).message,
    ).toBe('crm.people (no id): id is nested too deep to show, not an id')
    const long = rejection(() =>
      parseRecord(people, { id: 'x'.repeat(100_000), updated_at: '2022-12-14T14:53:43Z' }),
    )
    expect(long.message).toBe(`crm.people (no id): id is "${'x'.repeat(199)}..., not an id`)
    const { records } = parseRecords(people, [
      { id: 1, updated_at: deep },
      { id: 2, updated_at: '2022-12-14T14:53:43Z' },
    ])
    expect(records.map((r) => r.id)).toEqual([2])
  })

  it('reject something that is not an object', () => {
    expect(rejection(() => parseRecord(people, 'person')).field).toBe('(record)')
  })

  it('report, without rejecting, a value its mirror column cannot hold', () => {
    const drifts: Drift[] = []
    const record = parseRecord(deals, { id: 9, value: 'a lot', updated_at: '2024-05-01T10:00:00Z' }, (d) =>
      drifts.push(d),
    )
    expect(record.value).toBe('a lot')
    expect(drifts).toEqual([{ resource: 'crm.deals', id: 9, field: 'value', value: 'a lot' }])
  })

  it('split a page into usable records and rejected ones', () => {
    const { records, rejected } = parseRecords(people, [
      { id: 1, updated_at: '2022-12-14T14:53:43Z' },
      { updated_at: '2022-12-14T14:53:43Z' },
      { id: 3, updated_at: 'never' },
    ])
    expect(records.map((r) => r.id)).toEqual([1])
    expect(rejected.map((e) => [e.id, e.field])).toEqual([
      [null, 'id'],
      [3, 'updated_at'],
    ])
  })

  it('unwrap a wrapped record, and leave a bare one (with its own id) alone', () => {
    expect(unwrap('person', { person: { id: 1 } })).toEqual({ id: 1 })
    expect(unwrap('contact', { id: 222, contact: { id: 187 } })).toEqual({ id: 222, contact: { id: 187 } })
    expect(unwrap(null, { id: 222 })).toEqual({ id: 222 })
  })

  it("unwrap a record wrapped under any single key with wrapper '*', a key never seen before too", () => {
    expect(unwrap('*', { protocol_object_note: { id: 1 } })).toEqual({ id: 1 })
    expect(unwrap('*', { protocol_voice_memo: { id: 2 } })).toEqual({ id: 2 })
    expect(unwrap('*', { id: 3, protocol_user_note: { id: 4 } })).toEqual({
      id: 3,
      protocol_user_note: { id: 4 },
    })
    // Not one key holding an object: taken as it is (and rejected for want of an id).
    const two = { protocol_object_note: { id: 5 }, comments: [] }
    expect(unwrap('*', two)).toBe(two)
    const list = { protocols: [{ id: 6 }] }
    expect(unwrap('*', list)).toBe(list)
  })
})

describe('records through the client', () => {
  const database = useTestDatabase()
  useNock()

  it('returns the usable records of a page, reports rejected ones, and logs drift once per field', async () => {
    const { client, lines } = crmClient(database.db)
    nock(CRM_URL)
      .get('/api/deals')
      .query(true)
      .reply(200, [
        { deal: { id: 1, value: 'lots', updated_at: '2024-05-01T10:00:00Z' } },
        { deal: { id: 2, value: 'more', updated_at: '2024-05-01T10:00:00Z' } },
        { deal: { id: 3, updated_at: '01.05.2024' } },
      ])
    const page = await client.index(deals)
    expect(page.records.map((r) => r.id)).toEqual([1, 2])
    expect(page.size).toBe(3)
    expect(page.rejected.map((e) => e.message)).toEqual([
      'crm.deals 3: updated_at is "01.05.2024", not a timestamp',
    ])
    const drift = lines.filter((line) => line.includes('cannot hold'))
    expect(drift).toHaveLength(1)
    expect(JSON.parse(drift[0] as string)).toMatchObject({ resource: 'crm.deals', id: 1, field: 'value' })
  })
})

// The zod implementation that parsed each record twice (the keys, then every field for drift), kept
// as the reference the one-pass parser must match: the same record, the same error, the same drifts.
function referenceParser(resource: Resource) {
  const describe = (value: unknown) => (value === undefined ? 'is missing' : `is ${JSON.stringify(value)}`)
  const id = z.unknown().transform((value, ctx) => {
    const coerced = coerce('bigint', value)
    if (typeof coerced === 'number' && coerced > 0) return coerced
    ctx.addIssue({ code: 'custom', message: `${describe(value)}, not an id` })
    return z.NEVER
  })
  const updatedAt = z.unknown().transform((value, ctx) => {
    if (typeof value === 'string' && coerce('timestamptz', value) !== null) return value
    ctx.addIssue({ code: 'custom', message: `${describe(value)}, not a timestamp` })
    return z.NEVER
  })
  const keys = hasUpdatedAt(resource) ? z.looseObject({ id, updated_at: updatedAt }) : z.looseObject({ id })
  const fields = z.looseObject(
    Object.fromEntries(
      Object.entries(resource.columns).map(([name, column]) => [
        column.from ?? name,
        z
          .unknown()
          .optional()
          .refine((value) => {
            const mapped = column.map ? column.map(value) : value
            return mapped === undefined || mapped === null || coerce(column.type, mapped) !== null
          }),
      ]),
    ),
  )
  return (value: Record<string, unknown>) => {
    const drifts: Drift[] = []
    const parsed = keys.safeParse(value)
    if (!parsed.success) {
      const issue = parsed.error.issues[0]
      const coerced = coerce('bigint', value.id)
      const id = typeof coerced === 'number' ? coerced : null
      const field = String(issue?.path[0] ?? '(record)')
      return { error: [id, field, `${resource.name} ${id ?? '(no id)'}: ${field} ${issue?.message}`] }
    }
    const checked = fields.safeParse(value)
    if (!checked.success) {
      for (const issue of checked.error.issues) {
        const field = String(issue.path[0])
        drifts.push({ resource: resource.name, id: parsed.data.id, field, value: value[field] })
      }
    }
    return { record: parsed.data, drifts }
  }
}

function parsedNow(resource: Resource, value: Record<string, unknown>) {
  const drifts: Drift[] = []
  try {
    return { record: parseRecord(resource, value, (drift) => drifts.push(drift)), drifts }
  } catch (error) {
    if (!(error instanceof RejectedRecordError)) throw error
    return { error: [error.id, error.field, error.message] }
  }
}

describe('the one-pass record parser', () => {
  it('gives the record, rejection and drifts of the two zod passes, for every resource', () => {
    const values = [
      undefined,
      null,
      0,
      -3,
      1.5,
      7,
      '42',
      '',
      'abc',
      true,
      false,
      '2022-12-14T15:53:43.000+01:00',
      '2022-12-14T15:53:43Z',
      '2022-02-30T10:00:00Z',
      '2022-12-31',
      '31.12.2022',
      '1200.50',
      1e300,
      { nested: [1, 2] },
      [],
      'female_user',
    ]
    let seed = 7
    const pick = <T>(list: readonly T[]) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return list[seed % list.length] as T
    }
    const seen = { records: 0, rejected: 0, drifts: 0 }
    // The reference knows numeric ids only; text ids (attachments) are tested in test/sync/attachments.test.ts.
    const numbered = resources.filter((resource) => !hasTextId(resource))
    for (const resource of numbered) {
      const reference = referenceParser(resource)
      const keys = [...new Set(Object.entries(resource.columns).map(([name, column]) => column.from ?? name))]
      for (let i = 0; i < 400; i++) {
        const value: Record<string, unknown> = {}
        for (const key of keys) {
          const choice = pick(values)
          if (choice !== undefined || pick([true, false])) value[key] = choice
        }
        // Mostly usable ids and stamps, so that the fields are checked too.
        if (i % 4 !== 0) value.id = pick([1, 30016185, '77'])
        if (i % 4 !== 0 && i % 8 !== 1) value.updated_at = '2022-12-14T15:53:43.000+01:00'
        value.unknown_key = { kept: i }
        const expected = reference(structuredClone(value))
        const actual = parsedNow(resource, structuredClone(value))
        expect({ resource: resource.name, value, ...actual }).toEqual({
          resource: resource.name,
          value,
          ...expected,
        })
        if (actual.error) seen.rejected++
        else seen.records++
        seen.drifts += actual.drifts?.length ?? 0
      }
    }
    expect(seen.records + seen.rejected).toBe(numbered.length * 400)
    expect(seen.rejected).toBeGreaterThan(500)
    expect(seen.records).toBeGreaterThan(1000)
    expect(seen.drifts).toBeGreaterThan(1000)
  })
})
