// crm.attachments against the sandbox: the global index /api/attachments, keyed by the upstream's text
// `uuid`; the Base64 `data` its listings carry is never written anywhere in the database; convergence
// after creates, renames and deletes under hostile faults; deletions found by a complete walk (there is
// no show, count or webhook) and tombstoned, over several batches of text ids.
import { sql } from 'kysely'
import { describe, expect, it } from 'vitest'
import { type Sandbox, startSandbox } from '../../sandbox/index.ts'
import { compareMirror, describe as describeDifferences } from '../../sandbox/mirror-truth.ts'
import { RejectedRecordError } from '../../src/api-client/errors.ts'
import { parseRecords } from '../../src/api-client/records.ts'
import { attachments } from '../../src/resources/crm-attachments.ts'
import { idOf } from '../../src/resources/index.ts'
import type { Db } from '../../src/store/database.ts'
import { tombstone, upsertRecords } from '../../src/store/records.ts'
import { readRun } from '../../src/store/runs.ts'
import { listUnseenLiveIds } from '../../src/store/unseen-rows.ts'
import { JOB_SCHEMA } from '../../src/sync/job-queue.ts'
import { createTestDatabase } from '../support/database.ts'
import { startEngine, useEngineRig } from '../support/engine.ts'
import { waitFor } from '../support/process.ts'
import { sandboxConfig, sweep, sweepDeps } from './support.ts'

const rig = useEngineRig()

const SEED = { people: 20, protocols: 30, attachments: 120 }

type AttachmentRecord = { id: number; uuid: string; data: string; filename: string }

const liveAttachments = (upstream: Sandbox) =>
  upstream.control.crm
    .liveIds('attachments')
    .map((id) => upstream.control.crm.get('attachments', id) as AttachmentRecord)

async function attachmentDifferences(db: Db, upstream: Sandbox): Promise<string[]> {
  const tables = await compareMirror(db, upstream, { include: (resource) => resource === attachments })
  return describeDifferences(tables)
}

const inSync = (db: Db, upstream: Sandbox) => async () => {
  expect(await attachmentDifferences(db, upstream)).toEqual([])
  return true
}

/**
 * Every value of every text, json and jsonb column of crm.attachments and of the engine's schemas (sync
 * and the job queue's), as text: where a file's Base64 would be, had anything written it.
 */
async function storedText(db: Db): Promise<string[]> {
  const { rows: columns } = await sql<{ schema: string; table: string; column: string }>`
    select c.table_schema as schema, c.table_name as table, c.column_name as column
    from information_schema.columns c
    join information_schema.tables t on t.table_schema = c.table_schema and t.table_name = c.table_name
    where t.table_type = 'BASE TABLE'
      and c.data_type in ('text', 'character varying', 'json', 'jsonb')
      and ((c.table_schema = 'crm' and c.table_name = 'attachments') or c.table_schema in ('sync', ${JOB_SCHEMA}))
  `.execute(db)
  expect(columns.length).toBeGreaterThan(10)
  const values: string[] = []
  for (const { schema, table, column } of columns) {
    const { rows } = await sql<{ value: string | null }>`
      select ${sql.ref(column)}::text as value from ${sql.table(`${schema}.${table}`)}
    `.execute(db)
    for (const row of rows) if (row.value) values.push(row.value)
  }
  return values
}

/** No file, nor any part of one (its first 40 Base64 characters), is stored; no `_raw` has `data`. */
async function expectNoData(db: Db, files: string[]) {
  const stored = await storedText(db)
  const probes = files.map((file) => file.slice(0, 40))
  expect(probes.every((probe) => probe.length === 40)).toBe(true)
  const found = probes.filter((probe) => stored.some((value) => value.includes(probe)))
  expect(found).toEqual([])
  const { rows } = await sql<{ count: number }>`
    select count(*)::int as count from crm.attachments where _raw ? 'data'`.execute(db)
  expect(rows[0]?.count).toBe(0)
}

/** A small deterministic random source, so that a failure can be replayed. */
function random(seed: number) {
  let state = seed
  return () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
}

describe('crm.attachments', () => {
  it('are parsed by their uuid, without their file; a record without a uuid is rejected', () => {
    const stamp = '2022-12-08T15:31:09.000+01:00'
    const { records, rejected } = parseRecords(
      attachments,
      [
        { id: 9, uuid: 'b7e1-01', filename: 'a.pdf', updated_at: stamp, data: 'QUJD' },
        { uuid: 'a0c3-02', filename: 'b.png', updated_at: stamp, data: 'REVG' },
        { id: 11, filename: 'c.txt', updated_at: stamp, data: 'R0hJ' },
        { id: 12, uuid: '  ', updated_at: stamp, data: 'SktM' },
        { uuid: 'c4d5-03', updated_at: 'soon', data: 'TU5P' },
      ],
      () => {},
    )
    expect(records).toEqual([
      { id: 9, uuid: 'b7e1-01', filename: 'a.pdf', updated_at: stamp },
      { uuid: 'a0c3-02', filename: 'b.png', updated_at: stamp },
    ])
    expect(records.map((record) => idOf(attachments, record))).toEqual(['b7e1-01', 'a0c3-02'])
    expect(rejected.map((error) => [error.id, error.field])).toEqual([
      [null, 'uuid'],
      [null, 'uuid'],
      ['c4d5-03', 'updated_at'],
    ])
    // Nothing of a file reaches an error's message.
    for (const error of rejected) {
      expect(error).toBeInstanceOf(RejectedRecordError)
      expect(error.message).not.toMatch(/QUJD|REVG|R0hJ|SktM|TU5P/)
    }
  })

  it('are written, tombstoned and listed by their text ids under the rules of every other table', async () => {
    const database = rig.database(await createTestDatabase())
    const { db } = database
    const before = new Date(Date.now() - 60_000)
    const record = (uuid: string, filename: string, updatedAt: string) => ({
      uuid,
      filename,
      updated_at: updatedAt,
    })
    const t0 = '2024-05-01T10:00:00Z'
    const written = await upsertRecords(
      db,
      attachments,
      [
        record('b-2', 'zwei', t0),
        record('a-1', 'eins', t0),
        record('c-3', 'drei', t0),
        record('b-2', 'zwei', t0),
      ],
      { source: 'fetch', fetchedAt: before },
    )
    expect(written.inserted).toEqual(['a-1', 'b-2', 'c-3'])
    // A tombstone sticks against a page fetched before it; a later fetch brings the row back.
    expect(await tombstone(db, attachments, ['b-2', 'x-9'])).toEqual(expect.arrayContaining(['b-2', 'x-9']))
    const stale = await upsertRecords(db, attachments, [record('b-2', 'alt', t0)], {
      source: 'fetch',
      fetchedAt: before,
    })
    expect(stale.ignored).toEqual(['b-2'])
    const later = await upsertRecords(db, attachments, [record('b-2', 'wieder', '2024-05-01T10:00:05Z')], {
      source: 'fetch',
      fetchedAt: new Date(Date.now() + 1000),
    })
    expect(later.applied).toEqual(['b-2'])
    // Unseen live rows come in id order after a text id.
    const unseen = await listUnseenLiveIds(db, attachments, new Date(Date.now() + 60_000), '', 10)
    expect(unseen).toEqual(['a-1', 'b-2', 'c-3'])
    expect(await listUnseenLiveIds(db, attachments, new Date(Date.now() + 60_000), 'a-1', 10)).toEqual([
      'b-2',
      'c-3',
    ])
  })

  it('from empty a sweep makes the mirror equal the sandbox, keyed by uuid, with no file stored', async () => {
    // Pages of 20: 121 attachments make seven pages.
    const upstream = await startSandbox({
      seedSize: SEED,
      seed: 3,
      behaviour: { crmRateLimit: null, maxPerpage: 20 },
    })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const [noteId] = upstream.control.crm.liveIds('protocols') as [number]
    const given = Buffer.from('%PDF-1.4 a file given by a client\n'.repeat(100)).toString('base64')
    const created = upstream.control.crm.create('attachments', {
      data: given,
      original_filename: 'Vertrag.pdf',
      content_type: 'application/pdf',
      attachable_type: 'Protocol',
      attachable_id: noteId,
    }) as AttachmentRecord
    expect(created.data).toBe(given)
    // The listing carries the file, Base64, a few KB each.
    const answer = await fetch(`${upstream.crmUrl}/api/attachments?perpage=5`, {
      headers: { 'X-apikey': upstream.crmApiKey },
    })
    const listed = (await answer.json()) as { attachment: AttachmentRecord }[]
    expect(listed[0]?.attachment.data.length).toBeGreaterThan(1000)

    const runId = await sweep(sweepDeps(database.db, sandboxConfig(upstream)), {
      mode: 'incremental',
      resources: ['crm.attachments'],
    })

    expect((await readRun(database.db, runId))?.status).toBe('succeeded')
    await inSync(database.db, upstream)()
    const row = await database.db
      .selectFrom('crm.attachments')
      .select(['id', 'filename', 'content_type', 'attachable_type', 'attachable_id', '_raw', '_deleted_at'])
      .where('id', '=', created.uuid)
      .executeTakeFirstOrThrow()
    expect(row).toMatchObject({
      id: created.uuid,
      filename: 'Vertrag.pdf',
      content_type: 'application/pdf',
      attachable_type: 'Protocol',
      attachable_id: noteId,
      _deleted_at: null,
    })
    // `_raw` is the record as listed but for its file: the numeric id stays there.
    expect(row._raw).toMatchObject({ id: created.id, uuid: created.uuid, filename: 'Vertrag.pdf' })
    expect(Object.keys(row._raw as object)).not.toContain('data')
    const files = liveAttachments(upstream).map((record) => record.data)
    expect(files).toHaveLength(121)
    await expectNoData(database.db, files)
  })

  it('a deleted attachment is tombstoned by the next complete walk, over batches of text ids', async () => {
    const upstream = await startSandbox({ seedSize: SEED, seed: 7, behaviour: { crmRateLimit: null } })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    const deps = sweepDeps(db, sandboxConfig(upstream), { reconcileBatchSize: 7 })
    await sweep(deps, { mode: 'full', resources: ['crm.attachments'] })
    await inSync(db, upstream)()

    // Thirty deleted: five batches of unseen rows, each resumed after the last text id of the one before.
    const crm = upstream.control.crm
    const gone = liveAttachments(upstream)
      .filter((_, index) => index % 4 === 1)
      .slice(0, 30)
    for (const record of gone) crm.destroy('attachments', record.id)
    const runId = await sweep(deps, { mode: 'full', resources: ['crm.attachments'] })

    const run = await readRun(db, runId)
    expect(run?.status).toBe('succeeded')
    expect(run?.resources[0]?.tombstoned).toBe(30)
    const { rows } = await sql<{ id: string }>`
      select id from crm.attachments where _deleted_at is not null`.execute(db)
    expect(rows.map((entry) => entry.id).sort()).toEqual(gone.map((record) => record.uuid).sort())
    await inSync(db, upstream)()
  })

  it('converges after random creates, renames and deletes under hostile faults, and stores no file', async () => {
    const upstream = await startSandbox({ seedSize: SEED, seed: 5, behaviour: { crmRateLimit: null } })
    rig.sandbox(upstream)
    const database = rig.database(await createTestDatabase())
    const { db } = database
    const engine = rig.engine(
      await startEngine(upstream, database.url, {
        INCREMENTAL_SYNC_INTERVAL: '10',
        CRM_RATE_LIMIT: '1000',
        RESERVATION_RATE_LIMIT: '1000',
      }),
    )
    await waitFor(inSync(db, upstream), 60_000, 'the first sync of the attachments')

    upstream.control.setFaults({ crm: { errorRate: 0.05, throttleRate: 0.05 } })
    const next = random(17)
    const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T
    const crm = upstream.control.crm
    const files: string[] = liveAttachments(upstream).map((record) => record.data)
    const mirrored = new Set(liveAttachments(upstream).map((record) => record.uuid))
    const deleted: string[] = []
    for (let i = 0; i < 80; i++) {
      const roll = next()
      if (roll < 0.35) {
        const data = Buffer.from(`file ${i} `.repeat(200 + i)).toString('base64')
        files.push(data)
        const onNote = next() < 0.5
        crm.create('attachments', {
          data,
          original_filename: `neu ${i}.txt`,
          content_type: 'text/plain',
          attachable_type: onNote ? 'Protocol' : 'Person',
          attachable_id: pick(crm.liveIds(onNote ? 'protocols' : 'people')),
        })
      } else if (roll < 0.55) {
        crm.update('attachments', pick(crm.liveIds('attachments')), {
          original_filename: `umbenannt ${i}.pdf`,
        })
      } else {
        const id = pick(crm.liveIds('attachments'))
        deleted.push((crm.get('attachments', id) as AttachmentRecord).uuid)
        crm.destroy('attachments', id)
      }
    }
    await waitFor(inSync(db, upstream), 120_000, 'convergence of the attachments after the changes')
    await engine.stop()
    await expectNoData(db, files)
    // Every attachment deleted that the mirror had is a tombstone; one created and deleted between two
    // sweeps may never have been mirrored, and is no row at all.
    const { rows } = await sql<{ id: string }>`
      select id from crm.attachments where _deleted_at is not null`.execute(db)
    const tombstoned = rows.map((row) => row.id)
    expect(tombstoned.every((uuid) => deleted.includes(uuid))).toBe(true)
    expect(tombstoned).toEqual(expect.arrayContaining(deleted.filter((uuid) => mirrored.has(uuid))))
    expect(deleted.filter((uuid) => mirrored.has(uuid)).length).toBeGreaterThan(10)
  }, 240_000)
})
