// A whole crm-sync engine in a process of its own, composed by `start` as `npm start` does, from the
// environment the parent passes (see engines.ts).
import { parseConfig } from '../../src/config/index.ts'
import { createLogger } from '../../src/log.ts'
import { start } from '../../src/service.ts'
import { childOptions, serveChild } from './child.ts'

await serveChild(async () => {
  const config = parseConfig(childOptions<Record<string, string>>())
  const running = await start(config, createLogger({ level: config.logLevel, pretty: false }))
  return {
    ready: { port: running.port },
    stop: async () => {
      await running.stop()
    },
  }
})
