#!/usr/bin/env node
// Launcher of the `crm-sync` command. crm-sync needs Node 24 (it runs TypeScript directly); when an
// older system node starts this file, it hands over to the Node 24 that the project installs.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const entry = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url))
const major = Number(process.versions.node.split('.')[0])

if (major >= 24) {
  const { run } = await import(entry)
  process.exitCode = await run(process.argv.slice(2))
} else {
  const node = fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url))
  if (!existsSync(node)) {
    console.error(`crm-sync needs Node 24 or newer (this is ${process.version}); run npm install first`)
    process.exit(1)
  }
  const child = spawnSync(node, [entry, ...process.argv.slice(2)], { stdio: 'inherit' })
  process.exitCode = child.status ?? 1
}
