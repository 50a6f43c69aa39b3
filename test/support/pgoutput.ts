// A logical replication consumer for tests: reads a slot of the built-in `pgoutput` plugin (the one
// PeerDB, Airbyte, Fivetran and Debezium use) through SQL, and decodes its messages (protocol version 1)
// into the row changes a loader would apply.
import { sql } from 'kysely'
import type { Db } from '../../src/store/database.ts'

export interface RowChange {
  op: 'insert' | 'update' | 'delete' | 'truncate'
  /** Qualified: `crm.people` (truncate: every table it names, comma-separated). */
  table: string
  /** insert, update: the new row; delete: the old key (the replica identity's columns; others null). */
  row: Record<string, string | null>
}

interface Relation {
  table: string
  columns: string[]
}

class Reader {
  private at = 0
  private readonly data: Buffer
  constructor(data: Buffer) {
    this.data = data
  }
  byte = () => String.fromCharCode(this.advance(1, this.data.readUInt8(this.at)))
  int16 = () => this.advance(2, this.data.readInt16BE(this.at))
  int32 = () => this.advance(4, this.data.readInt32BE(this.at))
  skip(bytes: number) {
    this.at += bytes
  }
  string() {
    const end = this.data.indexOf(0, this.at)
    return this.advance(end - this.at + 1, this.data.toString('utf8', this.at, end))
  }
  text(length: number) {
    return this.advance(length, this.data.toString('utf8', this.at, this.at + length))
  }
  private advance<T>(bytes: number, value: T): T {
    this.at += bytes
    return value
  }
}

function tuple(reader: Reader, relation: Relation): Record<string, string | null> {
  const row: Record<string, string | null> = {}
  const count = reader.int16()
  for (let index = 0; index < count; index++) {
    const kind = reader.byte()
    const name = relation.columns[index] ?? `#${index}`
    if (kind === 't') row[name] = reader.text(reader.int32())
    else if (kind === 'n') row[name] = null
    else if (kind !== 'u') throw new Error(`unexpected tuple column kind ${kind}`)
  }
  return row
}

/** Decodes pgoutput messages (one per element) into row changes; `relations` persists across calls. */
export function decode(messages: Buffer[], relations = new Map<number, Relation>()): RowChange[] {
  const changes: RowChange[] = []
  for (const message of messages) {
    const reader = new Reader(message)
    const type = reader.byte()
    if (type === 'R') {
      const id = reader.int32()
      const table = `${reader.string()}.${reader.string()}`
      reader.skip(1) // replica identity setting
      const columns: string[] = []
      for (let count = reader.int16(); count > 0; count--) {
        reader.skip(1) // flags
        columns.push(reader.string())
        reader.skip(8) // type oid, type modifier
      }
      relations.set(id, { table, columns })
    } else if (type === 'I' || type === 'U' || type === 'D') {
      const relation = relations.get(reader.int32())
      if (!relation) throw new Error('a change before its relation')
      let marker = reader.byte()
      if (type === 'U' && (marker === 'K' || marker === 'O')) {
        tuple(reader, relation) // the old key or row; the new one follows
        marker = reader.byte()
      }
      const op = type === 'I' ? 'insert' : type === 'U' ? 'update' : 'delete'
      changes.push({ op, table: relation.table, row: tuple(reader, relation) })
    } else if (type === 'T') {
      const count = reader.int32()
      reader.skip(1) // options
      const ids = Array.from({ length: count }, () => reader.int32())
      changes.push({
        op: 'truncate',
        table: ids.map((id) => relations.get(id)?.table ?? `#${id}`).join(','),
        row: {},
      })
    }
    // B(egin), C(ommit), O(rigin), Y (type), M(essage): no row changes.
  }
  return changes
}

/** Takes the changes waiting in `slot` for the publications named (consuming them), decoded. */
export async function readSlot(db: Db, slot: string, publications: string): Promise<RowChange[]> {
  const { rows } = await sql<{ data: Buffer }>`
    select data from pg_logical_slot_get_binary_changes(${slot}, null, null,
      'proto_version', '1', 'publication_names', ${publications})`.execute(db)
  return decode(rows.map((row) => row.data))
}
