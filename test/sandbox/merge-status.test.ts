// Merges of people and companies and change_status of deals and projects, over the API and the control
// API: the least helpful way the facts allow by default (losers vanish without a webhook, what was
// theirs moves without touching anyone's updated_at; a state changes silently), and the kinder
// variant of status changes (`statusChangesTouchRecord`).
import { describe, expect, it } from 'vitest'
import { addHook, type Harness, harness, receiver } from './helpers.ts'

const DEAL = { value: 10, value_type: 'Total', value_count: 1, target_date: '2024-07-01' }

/** Hooks of every event for these models, lean, at one receiver: deliveries as `model event id`. */
async function hooked(h: Harness, models: string[]) {
  const target = await receiver()
  for (const model of models)
    for (const event of ['create', 'update', 'destroy'])
      await addHook(h, { model, event, target_url: target.url, object_type: 'lean' })
  return async () => {
    await h.sandbox.control.drainDeliveries()
    return target.received.map((d) => `${d.body.model} ${d.body.event} ${d.body.record_id}`)
  }
}

describe('merging people', () => {
  it('removes the losers silently, moves their tasks, notes, deals, projects and positions, and changes the winner', async () => {
    const h = await harness()
    const { crm } = h.sandbox.control
    const company = crm.create('companies', { name: 'Kranich AG' })
    const winner = crm.create('people', { name: 'Mustermann', first_name: 'Maxi' })
    const loser = crm.create('people', {
      name: 'Musterman',
      positions_attributes: [{ company_id: company.id, name: 'Einkauf' }],
    })
    const other = crm.create('people', { name: 'Muster' })
    const task = crm.create('tasks', { name: 'Anrufen', attachable_type: 'Person', attachable_id: loser.id })
    const note = crm.create('protocols', { name: 'Notiz', person_ids: [winner.id, loser.id] })
    const deal = crm.create('deals', { name: 'Lizenzen', ...DEAL, person_ids_set: `${loser.id}` })
    const project = crm.create('projects', {
      name: 'Umzug',
      target_date: '2024-08-01',
      person_ids_set: `${winner.id},${loser.id},${other.id}`,
    })
    const deliveries = await hooked(h, ['person', 'deal', 'project'])
    h.sandbox.control.resetCounters()
    h.clock.advance(5_000)

    const merged = await h.crm.send(
      'POST',
      `people/${winner.id}/merge?looser_ids=${loser.id},${other.id}`,
      {},
    )
    expect(merged).toMatchObject({ status: 200, text: '' })

    expect((await h.crm.get(`people/${loser.id}`)).status).toBe(404)
    expect(crm.deletedIds('people')).toEqual([loser.id, other.id])
    const person = crm.get('people', winner.id)
    expect(person?.updated_at).not.toBe(winner.updated_at)
    expect(person).toMatchObject({ name: 'Mustermann', first_name: 'Maxi' })
    expect(person?.positions).toMatchObject([
      { company_id: company.id, name: 'Einkauf', person_id: winner.id },
    ])
    expect(crm.get('companies', company.id)?.positions).toMatchObject([{ person_id: winner.id }])
    // What moved keeps its updated_at.
    expect(crm.get('tasks', task.id)).toMatchObject({ attachable_id: winner.id, updated_at: task.updated_at })
    expect(crm.get('protocols', note.id)).toMatchObject({
      person_ids: [winner.id],
      updated_at: note.updated_at,
    })
    expect(crm.get('deals', deal.id)).toMatchObject({
      people: [expect.objectContaining({ id: winner.id })],
      updated_at: deal.updated_at,
    })
    const projectNow = crm.get('projects', project.id)
    expect(((projectNow?.people ?? []) as { id: number }[]).map((p) => p.id)).toEqual([winner.id])
    expect(projectNow?.updated_at).toBe(project.updated_at)
    expect((await h.crm.get(`people/${winner.id}/tasks`)).body).toMatchObject([{ task: { id: task.id } }])
    // One webhook and one change: the winner's update.
    expect(await deliveries()).toEqual([`person update ${winner.id}`])
    expect(h.sandbox.control.counters().changes).toEqual({ 'person.update': 1 })
  })

  it('answers 400 without looser_ids, 404 for an unknown record, 422 when the winner is a loser; changes nothing then', async () => {
    const h = await harness()
    const { crm } = h.sandbox.control
    const winner = crm.create('people', { name: 'Eins' })
    const loser = crm.create('people', { name: 'Zwei' })
    expect((await h.crm.send('POST', `people/${winner.id}/merge`, {})).status).toBe(400)
    expect((await h.crm.send('POST', `people/${winner.id}/merge?looser_ids=`, {})).status).toBe(400)
    expect((await h.crm.send('POST', `people/${winner.id}/merge?looser_ids=${loser.id},1`, {})).status).toBe(
      404,
    )
    expect((await h.crm.send('POST', `people/${winner.id}/merge?looser_ids=x`, {})).status).toBe(404)
    expect((await h.crm.send('POST', `people/1/merge?looser_ids=${loser.id}`, {})).status).toBe(404)
    const itself = await h.crm.send('POST', `people/${winner.id}/merge?looser_ids=${winner.id}`, {})
    expect(itself).toMatchObject({ status: 422, body: { looser_ids: [expect.any(String)] } })
    expect(crm.liveIds('people')).toEqual([winner.id, loser.id])
    expect(crm.get('people', winner.id)?.updated_at).toBe(winner.updated_at)
    // The parameter repeated, and the .json suffix.
    const repeated = await h.crm.send('POST', `people/${winner.id}/merge.json?looser_ids[]=${loser.id}`, {})
    expect(repeated.status).toBe(200)
    expect(crm.liveIds('people')).toEqual([winner.id])
  })
})

describe('merging companies', () => {
  it("moves the loser's positions, deals, projects, tasks and notes to the winner, silently but for the winner", async () => {
    const h = await harness()
    const { crm } = h.sandbox.control
    const winner = crm.create('companies', { name: 'Kranich AG' })
    const loser = crm.create('companies', { name: 'Kranich GmbH' })
    const person = crm.create('people', {
      name: 'Angestellt',
      positions_attributes: [{ company_id: loser.id, name: 'Einkauf' }],
    })
    const deal = crm.create('deals', { name: 'Lizenzen', ...DEAL, company_id: loser.id })
    const project = crm.create('projects', { name: 'Umzug', target_date: '2024-08-01', company_id: loser.id })
    const task = crm.create('tasks', { name: 'Anrufen', attachable_type: 'Company', attachable_id: loser.id })
    const note = crm.create('protocols', { name: 'Notiz', company_ids: [loser.id] })
    const deliveries = await hooked(h, ['person', 'company', 'deal', 'project'])
    h.clock.advance(5_000)

    const shown = crm.merge('companies', winner.id, [loser.id])
    expect(shown.updated_at).not.toBe(winner.updated_at)
    expect(crm.liveIds('companies')).toEqual([winner.id])
    expect(crm.get('people', person.id)).toMatchObject({
      positions: [{ company_id: winner.id, company_name: 'Kranich AG' }],
      updated_at: person.updated_at,
    })
    expect(shown.positions).toMatchObject([{ person_id: person.id }])
    expect(crm.get('deals', deal.id)).toMatchObject({ company_id: winner.id, updated_at: deal.updated_at })
    expect(crm.get('projects', project.id)).toMatchObject({
      company_id: winner.id,
      updated_at: project.updated_at,
    })
    expect(crm.get('tasks', task.id)).toMatchObject({ attachable_id: winner.id, updated_at: task.updated_at })
    expect(crm.get('protocols', note.id)).toMatchObject({
      company_ids: [winner.id],
      updated_at: note.updated_at,
    })
    expect(await deliveries()).toEqual([`company update ${winner.id}`])
  })

  it('is a control call over HTTP too', async () => {
    const h = await harness()
    const { crm } = h.sandbox.control
    const winner = crm.create('companies', { name: 'Eins' })
    const loser = crm.create('companies', { name: 'Zwei' })
    const post = (path: string, body: unknown) =>
      h.crm.raw(`/__sandbox/crm/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    expect((await post(`companies/${winner.id}/merge`, { looser_ids: [] })).status).toBe(422)
    expect((await post(`deals/${winner.id}/merge`, { looser_ids: [loser.id] })).status).toBe(404)
    const merged = await post(`companies/${winner.id}/merge`, { looser_ids: [loser.id] })
    expect(merged).toMatchObject({ status: 200, body: { id: winner.id, name: 'Eins' } })
    expect(crm.liveIds('companies')).toEqual([winner.id])
  })
})

describe('change_status', () => {
  it("changes a deal's state and finished_at, and by default nothing else: no updated_at, webhook or activity", async () => {
    const h = await harness()
    const { crm } = h.sandbox.control
    const deal = crm.create('deals', { name: 'Lizenzen', ...DEAL })
    const deliveries = await hooked(h, ['deal'])
    h.sandbox.control.resetCounters()
    h.clock.advance(5_000)
    const put = (query: string, body: unknown) =>
      h.crm.send('PUT', `deals/${deal.id}/change_status${query}`, body)

    expect(await put('?current_state=won', {})).toMatchObject({ status: 200, text: '' })
    const won = (await h.crm.get(`deals/${deal.id}`)).body.deal
    expect(won).toMatchObject({ current_state: 'won', updated_at: deal.updated_at })
    expect(won.finished_at).not.toBeNull()
    // Under `status`, in a body bare or wrapped.
    expect((await put('', { status: 'open_50' })).status).toBe(200)
    expect(crm.get('deals', deal.id)).toMatchObject({ current_state: 'open_50', finished_at: null })
    expect((await put('.json', { deal: { current_state: 'lost' } })).status).toBe(200)
    expect(crm.get('deals', deal.id)).toMatchObject({ current_state: 'lost', updated_at: deal.updated_at })
    expect(await deliveries()).toEqual([])
    expect(h.sandbox.control.counters().changes).toEqual({})

    expect(await put('?current_state=closed', {})).toMatchObject({
      status: 422,
      body: { current_state: [expect.any(String)] },
    })
    expect((await put('', {})).status).toBe(400)
    expect((await h.crm.send('PUT', 'deals/1/change_status?current_state=won', {})).status).toBe(404)
  })

  it('finishes a project when closed; the control call does the same', async () => {
    const h = await harness()
    const { crm } = h.sandbox.control
    const project = crm.create('projects', { name: 'Umzug', target_date: '2024-08-01' })
    h.clock.advance(5_000)
    const closed = crm.changeStatus('projects', project.id, 'closed')
    expect(closed).toMatchObject({ current_state: 'closed', updated_at: project.updated_at })
    expect(closed.finished_at).not.toBeNull()
    expect(() => crm.changeStatus('projects', project.id, 'won')).toThrow(/invalid/)
    const over = await h.crm.raw(`/__sandbox/crm/projects/${project.id}/change_status`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ current_state: 'ready' }),
    })
    expect(over).toMatchObject({ status: 200, body: { current_state: 'ready', finished_at: null } })
  })

  it('with statusChangesTouchRecord, bumps updated_at and sends the update (the kinder variant)', async () => {
    const h = await harness({ behaviour: { statusChangesTouchRecord: true } })
    const { crm } = h.sandbox.control
    const deal = crm.create('deals', { name: 'Lizenzen', ...DEAL })
    const deliveries = await hooked(h, ['deal'])
    h.clock.advance(5_000)
    expect((await h.crm.send('PUT', `deals/${deal.id}/change_status?status=won`, {})).status).toBe(200)
    const won = crm.get('deals', deal.id)
    expect(won?.updated_at).not.toBe(deal.updated_at)
    expect(won?.finished_at).toBe(won?.updated_at)
    // The same state again changes nothing.
    h.clock.advance(5_000)
    crm.changeStatus('deals', deal.id, 'won')
    expect(crm.get('deals', deal.id)?.updated_at).toBe(won?.updated_at)
    expect(await deliveries()).toEqual([`deal update ${deal.id}`])
  })
})
