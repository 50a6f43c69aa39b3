#!/usr/bin/env node
// Launcher of the `crm-sync` command (also behind `npm start`, `npm run cli` and the Dockerfile's
// ENTRYPOINT). crm-sync needs Node 24 (it runs TypeScript directly) and the V8 flags of
// node-flags.js. On a Node 24 started with those flags it runs the CLI in this process; otherwise it
// runs Node 24 with them: it replaces this process (same pid, signals and stdio) where Node can
// (process.execve), else it runs it as a child, e.g. when an older system node starts this file, and
// passes signals on to it (runChild).
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { constants as osConstants } from 'node:os'
import { fileURLToPath } from 'node:url'
import { missingNodeFlags } from './node-flags.js'

// `crm-sync sandbox` runs the simulator of the upstream services (../sandbox), a development tool that
// the engine never imports and that the container image does not carry.
const commandAt = process.argv.slice(2).findIndex((arg) => !arg.startsWith('-'))
const sandbox = commandAt !== -1 && process.argv[2 + commandAt] === 'sandbox'
const entry = fileURLToPath(new URL(sandbox ? '../sandbox/main.ts' : '../src/cli/main.ts', import.meta.url))
const args = sandbox ? process.argv.slice(3 + commandAt) : process.argv.slice(2)
if (sandbox && !existsSync(entry)) {
  console.error(
    'crm-sync sandbox: the simulator is a development tool and is not installed here (the container image carries the engine only); run it from a clone of the repository: npm run sandbox',
  )
  process.exit(2)
}
const major = Number(process.versions.node.split('.')[0])
const flags = missingNodeFlags(process.execArgv, process.env.NODE_OPTIONS)

if (major >= 24 && flags.length === 0) {
  const { run } = await import(entry)
  process.exitCode = await run(args)
} else {
  const node =
    major >= 24 ? process.execPath : fileURLToPath(new URL('../node_modules/.bin/node', import.meta.url))
  if (!existsSync(node)) {
    console.error(`crm-sync needs Node 24 or newer (this is ${process.version}); run npm install first`)
    process.exit(1)
  }
  // This Node's own flags (--inspect, --env-file, ...) go along when it is the Node that runs crm-sync.
  const argv = [...(major >= 24 ? process.execArgv : []), ...flags, entry, ...args]
  if (typeof process.execve === 'function' && process.platform !== 'win32') {
    process.execve(node, [node, ...argv], process.env) // does not return
  }
  process.exitCode = await runChild(node, argv)
}

/**
 * Runs Node 24 as a child until it ends, and ends with its code (or its signal, as 128 + its number).
 * SIGTERM, SIGINT and SIGHUP sent to this process go on to the child, so that a supervisor signalling
 * the pid it started stops the service. The child has a process group of its own: Ctrl-C in a terminal
 * reaches this process only, and the child gets it once (a second SIGINT would cut its shutdown short).
 */
function runChild(node, argv) {
  const child = spawn(node, argv, { stdio: 'inherit', detached: true })
  const forward = (signal) => child.kill(signal)
  const forwarded = ['SIGTERM', 'SIGINT', 'SIGHUP']
  for (const signal of forwarded) process.on(signal, forward)
  return new Promise((resolve) => {
    child.on('error', (error) => {
      console.error(`crm-sync: could not run ${node}: ${error.message}`)
      resolve(1)
    })
    child.on('exit', (code, signal) => {
      for (const name of forwarded) process.off(name, forward)
      resolve(code ?? 128 + (signal ? osConstants.signals[signal] : 0))
    })
  })
}
