// The chat example in a real browser: Debian's Chromium, headless, driven by
// playwright-core, against examples/chat on the built-in offline model. The
// model is held at chosen points (a gate around its stream) so the test, not
// the clock, decides when the second message, the Stop and the reload land.
// Screenshots go to a temporary folder printed at the start.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startChatExample, type ChatExample } from '../../examples/chat/server.js'
import { localModel } from '../../src/cli/demo/local-model.js'
import type { Agent, ModelAdapter, ModelRequest, SessionEvent, StreamChunk } from '../../src/index.js'
import { checkSessionInvariants } from '../../src/testing/index.js'
import { gate, logged, type Gate } from './helpers.js'

const CHROMIUM = [process.env.AGENTCHART_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p))
if (!CHROMIUM) console.warn('chat browser test SKIPPED: no Chromium at /usr/bin/chromium (or set AGENTCHART_CHROMIUM)')

/** The offline model, with a gate the test can arm: the next request holds before its second text delta until it opens. */
function holdableModel() {
  const inner = localModel()
  let armed: Gate | null = null
  const requests: ModelRequest[] = []
  const model: ModelAdapter = {
    provider: inner.provider,
    model: inner.model,
    async *stream(request: ModelRequest): AsyncGenerator<StreamChunk> {
      requests.push(request)
      const held = armed
      armed = null
      let deltas = 0
      for await (const chunk of inner.stream(request)) {
        if (held && chunk.type === 'text-delta' && ++deltas === 2) await held.wait(request.signal)
        yield chunk
      }
    },
  }
  return {
    model,
    requests,
    hold: () => (armed = gate()),
  }
}

const turnEnds = (agent: Agent) => agent.session.events.filter((e): e is SessionEvent & { type: 'turn/end' } => e.type === 'turn/end')
const textOf = (content: readonly { type: string; text?: string }[]) => content.map((b) => (b.type === 'text' ? b.text : '')).join('')

describe.skipIf(!CHROMIUM)('the chat example in headless Chromium', () => {
  let profile: string
  let data: string
  let shots: string
  let context: BrowserContext
  let example: ChatExample
  const control = holdableModel()

  beforeAll(async () => {
    shots = mkdtempSync(join(tmpdir(), 'agentchart-chat-shots-'))
    console.log(`chat browser screenshots: ${shots}`)
    data = mkdtempSync(join(tmpdir(), 'agentchart-chat-data-'))
    example = await startChatExample({ dataDir: data, model: control.model, print: () => {} })
    profile = mkdtempSync(join(tmpdir(), 'agentchart-chromium-'))
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1100, height: 900 },
      args: [...(process.getuid?.() === 0 ? ['--no-sandbox'] : []), '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
    })
  }, 120_000)

  afterAll(async () => {
    await context?.close()
    await example?.close()
    for (const dir of [profile, data]) if (dir) rmSync(dir, { recursive: true, force: true })
  })

  async function open(): Promise<{ page: Page; chatId: string; problems: string[] }> {
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console error: ${message.text()}`)
    })
    await page.goto(example.url)
    await page.waitForSelector('[data-testid="messages"][data-attached="true"]')
    const chatId = new URL(page.url()).searchParams.get('chat')!
    return { page, chatId, problems }
  }

  async function type(page: Page, text: string): Promise<void> {
    await page.fill('[data-testid="input"]', text)
    await page.click('[data-testid="send"]')
  }

  const assistantText = (page: Page, nth: number) =>
    page
      .locator('[data-role="assistant"]')
      .nth(nth)
      .locator('.text')
      .allInnerTexts()
      .then((t) => t.join(''))

  it('streams text and tool parts; a second message typed while the turn runs joins it (one turn, the steer in the next step)', async () => {
    const { page, chatId, problems } = await open()
    const held = control.hold()
    await type(page, 'What does README.md say?')
    await expect.poll(() => assistantText(page, 0)).not.toBe('')
    await page.screenshot({ path: join(shots, '1-streaming.png') })
    const agent = await example.agent(chatId)
    await type(page, 'Also, what is in package.json?')
    await logged(agent, (e) => e.type === 'agent/inbox/spliced' && e.data.target === 'next-step' && e.data.inserted.length > 0)
    held.open()
    await expect.poll(() => turnEnds(agent).length, { timeout: 15_000 }).toBe(1)
    await page.waitForSelector('[data-testid="messages"][data-status="ready"]')
    await agent.flush()

    const events = agent.session.events
    expect(events.filter((e) => e.type === 'turn/start')).toHaveLength(1)
    const steer = events.find((e) => e.type === 'user/message' && textOf(e.data.content) === 'Also, what is in package.json?')!
    const stepBefore = events.slice(0, steer.seq).findLast((e) => e.type === 'step/start')!
    expect((stepBefore.data as { step: number }).step).toBeGreaterThan(1)
    expect(turnEnds(agent)[0].data.reason.kind).toBe('completed')
    // the page: the prompt, step one's answer with its tool parts, the steer, the rest of the turn
    const roles = await page.locator('[data-testid="message"]').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-role')))
    expect(roles).toEqual(['user', 'assistant', 'user', 'assistant'])
    const tools = page.locator('[data-testid="tool"]')
    expect(await tools.count()).toBeGreaterThan(0)
    expect(await tools.first().getAttribute('data-state')).toBe('output-available')
    const logAnswer = events.filter((e) => e.type === 'assistant/message').at(-1)!
    expect(await assistantText(page, 1)).toContain(textOf((logAnswer.data as { message: { content: { type: string; text?: string }[] } }).message.content))
    await page.screenshot({ path: join(shots, '2-steered.png'), fullPage: true })
    expect(checkSessionInvariants(events)).toEqual([])
    expect(problems).toEqual([])

    // the viewer is one click away
    const [viewer] = await Promise.all([context.waitForEvent('page'), page.click('[data-testid="viewer-link"]')])
    await viewer.waitForSelector('body[data-connection="open"], body[data-connection="ended"]')
    await viewer.screenshot({ path: join(shots, '3-viewer.png') })
    await viewer.close()
    await page.close()
  }, 60_000)

  it('Stop ends the server turn aborted within the cancel grace, keeps the partial answer, and no further request is made', async () => {
    const { page, chatId, problems } = await open()
    control.hold()
    await type(page, 'What does package.json say?')
    await expect.poll(() => assistantText(page, 0)).not.toBe('')
    const agent = await example.agent(chatId)
    const requestsAtStop = control.requests.length
    const stoppedAt = performance.now()
    await page.click('[data-testid="stop"]')
    const end = (await logged(agent, (e) => e.type === 'turn/end')) as SessionEvent & { type: 'turn/end' }
    const elapsed = performance.now() - stoppedAt
    console.log(`chat browser: Stop click to turn/end{aborted} in the log: ${elapsed.toFixed(0)} ms (cancel grace 1000 ms)`)
    expect(end.data.reason).toEqual({ kind: 'aborted', reason: { kind: 'user' } })
    await page.waitForSelector('[data-testid="turn"][data-status="aborted"]')
    await agent.whenIdle()
    expect(control.requests.length).toBe(requestsAtStop)
    const partial = agent.session.events.filter((e) => e.type === 'assistant/message').at(-1)!
    expect(partial.data).toMatchObject({ interrupted: true })
    expect(await assistantText(page, 0)).toBe(textOf((partial.data as { message: { content: { type: string; text?: string }[] } }).message.content))
    await page.screenshot({ path: join(shots, '4-stopped.png'), fullPage: true })
    expect(problems).toEqual([])
    await page.close()
  }, 60_000)

  it('TL-18: with approvals on, read_file waits as a tool part with Approve / Deny; approving runs it and the turn goes on', async () => {
    const asking = await startChatExample({ dataDir: data, model: control.model, approvals: true, print: () => {} })
    try {
      const page = await context.newPage()
      await page.goto(asking.url)
      await page.waitForSelector('[data-testid="messages"][data-attached="true"]')
      const chatId = new URL(page.url()).searchParams.get('chat')!
      await type(page, 'What does README.md say?')
      const tool = page.locator('[data-testid="tool"][data-state="approval-requested"]')
      await tool.waitFor()
      const agent = await asking.agent(chatId)
      expect(agent.pendingApprovals.map((p) => p.name)).toEqual(['read_file'])
      await page.screenshot({ path: join(shots, '7-approval-asked.png'), fullPage: true })
      await tool.getByRole('button', { name: 'Approve' }).click()
      await expect.poll(() => turnEnds(agent).length, { timeout: 15_000 }).toBe(1)
      await page.waitForSelector('[data-testid="messages"][data-status="ready"]')
      expect(agent.session.events.filter((e) => e.type === 'tool/approval-answer').map((e) => e.data)).toMatchObject([{ decision: 'approve' }])
      expect(await page.locator('[data-testid="tool"]').first().getAttribute('data-state')).toBe('output-available')
      expect(turnEnds(agent)[0].data.reason.kind).toBe('completed')
      await page.screenshot({ path: join(shots, '8-approved.png'), fullPage: true })
      await page.close()
    } finally {
      await asking.close()
    }
  }, 60_000)

  it('a reload during a turn shows the rest of that turn’s answer', async () => {
    const { page, chatId } = await open()
    const held = control.hold()
    await type(page, 'What does README.md say?')
    await expect.poll(() => assistantText(page, 0)).not.toBe('')
    const agent = await example.agent(chatId)
    await page.reload()
    await page.waitForSelector('[data-testid="messages"][data-attached="true"]')
    // the reloaded page has the prompt from the log and the running answer from the resume stream
    await expect.poll(() => assistantText(page, 0)).not.toBe('')
    await page.screenshot({ path: join(shots, '5-reloaded-mid-turn.png'), fullPage: true })
    held.open()
    await expect.poll(() => turnEnds(agent).length, { timeout: 15_000 }).toBe(1)
    await page.waitForSelector('[data-testid="messages"][data-status="ready"]')
    expect(turnEnds(agent)[0].data.reason.kind).toBe('completed')
    const answer = agent.session.events.filter((e) => e.type === 'assistant/message').at(-1)!
    const last = textOf((answer.data as { message: { content: { type: string; text?: string }[] } }).message.content)
    expect(await assistantText(page, 0)).toContain(last)
    const roles = await page.locator('[data-testid="message"]').evaluateAll((nodes) => nodes.map((n) => n.getAttribute('data-role')))
    expect(roles).toEqual(['user', 'assistant'])
    await page.screenshot({ path: join(shots, '6-reloaded-finished.png'), fullPage: true })
    await page.close()
  }, 60_000)
})
