import { createLogger } from '../../src/log.ts'
import { QUEUES, startJobQueue } from '../../src/sync/job-queue.ts'
import { openServer, createBenchDatabase } from '../support/database.ts'
const server = await openServer(undefined)
const database = await createBenchDatabase(server, 'exp')
const queue = await startJobQueue(database.url, createLogger({ level: 'warn' }))
let captured: { text: string; values: unknown[] } | undefined
await queue.send(QUEUES.delivery.name, { inbox_id: 1 }, { id: '3b241101-e2bb-4255-8caf-4136c566a962', db: { async executeSql(text: string, values: unknown[] = []) { captured = { text, values }; return { rows: [{ id: 'x' }] } } } })
console.log(captured?.text)
console.log(JSON.stringify(captured?.values))
await queue.stop({ graceful: false })
await database.drop()
