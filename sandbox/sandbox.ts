// Starting the sandbox: both upstream services on loopback ports, sharing one in-memory account,
// with the control API under /__sandbox on each.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import type { Hono } from 'hono'
import { createControl, type SandboxControl } from './control.ts'
import { controlRoutes } from './control-routes.ts'
import { createCrmApp } from './crm.ts'
import { createReservationApp } from './reservation.ts'
import type { SeedCount } from './seed.ts'
import { createState, type StateOptions } from './state.ts'

export interface SandboxOptions extends StateOptions {
  /** Default 127.0.0.1. */
  host?: string
  /** 0 (the default) picks a free port. */
  crmPort?: number
  reservationPort?: number
  crmApiKey?: string
  reservationApiKey?: string
  /** Records generated at start: of each resource, or per resource (`{ people: 200_000 }`). Default 0. */
  seedSize?: SeedCount
  /** Adds bulk-edit groups of this many records sharing one `updated_at` (SeedOptions `ties`). */
  seedTies?: number
  /** Bytes of each seeded attachment's file (SeedOptions `attachmentBytes`). */
  seedAttachmentBytes?: { min: number; max: number }
}

export interface Sandbox {
  /** Base URLs: the APIs are below `${url}/api`, the control API below `${url}/__sandbox`. */
  crmUrl: string
  reservationUrl: string
  crmApiKey: string
  reservationApiKey: string
  control: SandboxControl
  stop(): Promise<void>
}

async function listen(app: Hono, host: string, port: number): Promise<{ server: Server; url: string }> {
  const server = createServer(getRequestListener(app.fetch))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  const address = server.address() as AddressInfo
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return { server, url: `http://${shownHost}:${address.port}` }
}

async function close(server: Server): Promise<void> {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const state = createState(options)
  const control = createControl(state)
  if (options.seedSize)
    control.seed({
      count: options.seedSize,
      ties: options.seedTies,
      attachmentBytes: options.seedAttachmentBytes,
    })
  const crmApiKey = options.crmApiKey ?? 'sandbox-crm-key'
  const reservationApiKey = options.reservationApiKey ?? 'sandbox-reservation-key'
  const { store, clock, behaviour, faults, holder } = state
  const gate = (service: 'crm' | 'reservation', apiKey: string) => ({
    apiKey,
    clock,
    random: state.apiRandom,
    faults: () => faults[service],
    rateLimit: () => (service === 'crm' ? behaviour.crmRateLimit : behaviour.reservationRateLimit),
    counters: () => holder.counters[service],
  })
  const maxPerpage = () => behaviour.maxPerpage
  const ties = () => (behaviour.tieOrder === 'shuffled' ? state.tieRandom.next : undefined)

  const crmApp = createCrmApp({
    account: state.crm,
    store,
    ids: state.ids,
    clock,
    apiUserId: state.apiUserId,
    maxPerpage,
    behaviour: () => behaviour,
    ties,
    gate: gate('crm', crmApiKey),
  })
  const reservationApp = createReservationApp({
    account: state.reservation,
    store,
    maxPerpage,
    undocumentedPaging: () => state.undocumentedPaging,
    ties,
    gate: gate('reservation', reservationApiKey),
  })
  for (const app of [crmApp, reservationApp]) app.route('/__sandbox', controlRoutes(control))

  const host = options.host ?? '127.0.0.1'
  const crm = await listen(crmApp, host, options.crmPort ?? 0)
  const reservation = await listen(reservationApp, host, options.reservationPort ?? 0).catch(
    async (error) => {
      await close(crm.server)
      throw error
    },
  )
  return {
    crmUrl: crm.url,
    reservationUrl: reservation.url,
    crmApiKey,
    reservationApiKey,
    control,
    async stop() {
      await state.deliveries.stop()
      await Promise.all([close(crm.server), close(reservation.server)])
    },
  }
}
