// A connection that breaks while checked out of the pool (the database stopped, a proxy cut it) must
// not end the process: the pool discards it and the next query gets a new one.
import { sql } from 'kysely'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { createDb, createPool } from '../../src/store/database.ts'
import { useTestDatabase } from '../support/database.ts'
import { waitFor } from '../support/process.ts'

describe('pool', () => {
  const database = useTestDatabase()

  it('survives a connection that breaks while checked out, and serves the next query', async () => {
    const pool = createPool(database.url, { max: 2 })
    // As every pool of crm-sync's has (src/database/runtime.ts): pg-pool hands the errors of a client
    // that is back in the pool to it, and the broken client is given back while its socket may still
    // be closing.
    pool.on('error', () => {})
    const unheard: unknown[] = []
    const listener = (error: unknown) => unheard.push(error)
    process.on('uncaughtException', listener)
    try {
      const client = await pool.connect()
      const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid')
      const admin = new pg.Client({ connectionString: database.url })
      await admin.connect()
      await admin.query('select pg_terminate_backend($1)', [rows[0]?.pid])
      await admin.end()
      // the checked-out client learns that its connection is gone
      await waitFor(
        async () =>
          client.query('select 1').then(
            () => undefined,
            () => true,
          ),
        10_000,
        'the broken connection to fail its query',
      )
      client.release(true)
      const after = await sql<{ one: number }>`select 1 as one`.execute(createDb(pool))
      expect(after.rows).toEqual([{ one: 1 }])
      expect(unheard).toEqual([])
    } finally {
      process.off('uncaughtException', listener)
      await pool.end()
    }
  })
})
