import { describe, expect, it } from 'vitest'
import { people } from '../../src/resources/index.ts'
import { tombstone, upsertRecords } from '../../src/store/records.ts'
import {
  countLiveRows,
  readResourceState,
  readResourceStates,
  writeResourceState,
} from '../../src/store/sync-state.ts'
import { useTestDatabase } from '../support/database.ts'

const database = useTestDatabase()

describe('sync state', () => {
  it('is written in parts and read back per resource', async () => {
    expect(await readResourceState(database.db, 'crm.people')).toBeUndefined()
    const watermark = new Date('2026-11-22T10:00:00Z')
    await writeResourceState(database.db, 'crm.people', { watermark, last_remote_count: 40 })
    await writeResourceState(database.db, 'crm.people', { last_incremental_sync_at: watermark })
    await writeResourceState(database.db, 'crm.deals', { last_remote_count: 3 })
    const state = await readResourceState(database.db, 'crm.people')
    expect(state).toMatchObject({ watermark, last_remote_count: 40, last_incremental_sync_at: watermark })
    expect((await readResourceStates(database.db)).map((s) => s.resource)).toEqual([
      'crm.deals',
      'crm.people',
    ])
  })

  it('counts live rows only', async () => {
    const fetched = { source: 'fetch' as const, fetchedAt: new Date() }
    const record = (id: number) => ({ id, updated_at: '2022-12-14T15:53:43.000+01:00' })
    await upsertRecords(database.db, people, [record(1), record(2), record(3)], fetched)
    await tombstone(database.db, people, [2, 99])
    expect(await countLiveRows(database.db, people)).toBe(2)
  })
})
