// The viewer in a real browser: Debian's Chromium, headless, driven by
// playwright-core. A scripted agent runs a turn with a failed request and its
// retry, two parallel reads and an exclusive write, a steer and a cancel, then
// a second turn; the page is checked at each hold point (the lit-up state
// follows the agent), then for its timeline bands and lanes and its log.
// A 10,000-event stored session checks that the page stays virtualised.
// Screenshots go to test-artifacts/viewer/.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium, type BrowserContext, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Agent } from '../../src/index.js'
import { subagentsOf } from '../../src/index.js'
import { leafPaths } from '../../src/viewer/chart.js'
import { serveViewer, type ViewerHandle } from '../../src/viewer/index.js'
import { approvalScenario, delegationScenario, HOSTILE, largeSession, scenario } from './scenario.js'

const CHROMIUM = [process.env.AGENTCHART_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => !!p && existsSync(p))
const ARTIFACTS = fileURLToPath(new URL('../../test-artifacts/viewer/', import.meta.url))

if (!CHROMIUM) {
  console.warn('viewer browser test SKIPPED: no Chromium at /usr/bin/chromium (apt-get install -y chromium, or set AGENTCHART_CHROMIUM)')
}

describe.skipIf(!CHROMIUM)('viewer in headless Chromium', () => {
  let profile: string
  let context: BrowserContext
  const viewers: ViewerHandle[] = []

  beforeAll(async () => {
    mkdirSync(ARTIFACTS, { recursive: true })
    profile = mkdtempSync(join(tmpdir(), 'agentchart-chromium-'))
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1400, height: 1000 },
      args: [
        ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
  }, 60_000)

  afterAll(async () => {
    for (const viewer of viewers) await viewer.close()
    await context?.close()
    if (profile) rmSync(profile, { recursive: true, force: true })
  })

  /** Open the page and record anything that reaches for the network or breaks. */
  async function open(url: string): Promise<{ page: Page; problems: string[] }> {
    const page = await context.newPage()
    const problems: string[] = []
    const origin = new URL(url).origin
    page.on('request', (request) => {
      if (!request.url().startsWith(origin) && !request.url().startsWith('data:')) problems.push(`request to ${request.url()}`)
    })
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`))
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console error: ${message.text()}`)
    })
    await page.goto(url)
    await page.waitForSelector('body[data-connection="open"], body[data-connection="ended"]')
    return { page, problems }
  }

  /** Wait until the page lights up exactly the leaves the agent's actor is in now; returns them. */
  async function expectActive(page: Page, agent: Agent): Promise<string> {
    const leaves = leafPaths(agent.actor.getSnapshot().value)
    const want = leaves.join(' ')
    await expect.poll(() => page.locator('section.machine').getAttribute('data-active')).toBe(want)
    const lit = await page.$$eval('.state.active.leaf', (boxes) => boxes.map((b) => b.getAttribute('data-path')))
    expect(lit.sort()).toEqual([...leaves].sort())
    return want
  }

  const count = (page: Page, selector: string) => page.locator(selector).count()
  const shot = async (page: Page, name: string) => {
    await page.evaluate('window.scrollTo(0, 0)')
    // the views redraw once a frame: let the last change land before the picture is taken
    await page.evaluate('new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))')
    const path = join(ARTIFACTS, `${name}.png`)
    await page.screenshot({ path, fullPage: true })
    return path
  }

  /**
   * The statechart's drawing as measured in the page: every shown edge label against every state box (a label
   * may only lie wholly inside a compound state, never touch an atomic one or straddle an edge of a box), each
   * label's text inside its own box, and every edge segment clear of the atomic states it does not start or end at.
   */
  async function chartGeometry(page: Page): Promise<{ labels: number; edges: number; problems: string[] }> {
    return page.evaluate(() => {
      type Box = { x: number; y: number; width: number; height: number }
      const problems: string[] = []
      // this runs in the page: the test's own compiler knows no DOM, so its elements are typed loosely
      const document = (globalThis as any).document
      const bbox = (e: any): Box => e.getBBox()
      const overlap = (a: Box, b: Box) => a.x < b.x + b.width && a.x + a.width > b.x && a.y < b.y + b.height && a.y + a.height > b.y
      const inside = (a: Box, b: Box, slack = 0) =>
        a.x >= b.x - slack && a.y >= b.y - slack && a.x + a.width <= b.x + b.width + slack && a.y + a.height <= b.y + b.height + slack
      let labels = 0
      let edges = 0
      for (const machine of document.querySelectorAll('section.machine') as any[]) {
        const states = [...machine.querySelectorAll('g.state')].map((g: any) => ({
          path: g.getAttribute('data-path') ?? '',
          compound: g.classList.contains('type-compound') || g.classList.contains('type-parallel'),
          box: bbox(g.querySelector('rect.box')),
        }))
        for (const label of machine.querySelectorAll('g.edge-label:not(.hidden)') as any[]) {
          labels++
          const name = `${label.getAttribute('data-from')} → ${label.getAttribute('data-to')}`
          const box = bbox(label.querySelector('rect'))
          if (!inside(bbox(label.querySelector('text')), box, 0.5)) problems.push(`the text of ${name} spills out of its label box`)
          for (const state of states) {
            if (!overlap(box, state.box)) continue
            if (state.compound && inside(box, state.box)) continue
            problems.push(`label ${name} overlaps state ${state.path}`)
          }
        }
        for (const edge of machine.querySelectorAll('g.edge:not(.hidden)') as any[]) {
          edges++
          const from = edge.getAttribute('data-from')
          const to = edge.getAttribute('data-to')
          const points = (edge.querySelector('path')?.getAttribute('d') ?? '').match(/-?[\d.]+/g)?.map(Number) ?? []
          for (let i = 0; i + 3 < points.length; i += 2) {
            const [x1, y1, x2, y2] = points.slice(i, i + 4)
            const seg = { x: Math.min(x1, x2), y: Math.min(y1, y2), width: Math.abs(x2 - x1) || 0.01, height: Math.abs(y2 - y1) || 0.01 }
            for (const state of states) {
              if (state.compound || state.path === from || state.path === to) continue
              const core = { x: state.box.x + 1, y: state.box.y + 1, width: state.box.width - 2, height: state.box.height - 2 }
              if (overlap(seg, core)) problems.push(`edge ${from} → ${to} crosses state ${state.path}`)
            }
          }
        }
      }
      return { labels, edges, problems }
    })
  }

  it('follows a live agent: active states, timeline bands and lanes, the log', async () => {
    const s = scenario()
    const viewer = await serveViewer(s.agent, { print: false, title: 'browser test' })
    viewers.push(viewer)
    const { page, problems } = await open(viewer.url)
    const seen: string[] = []

    // 1. the first request failed; the recovery listener holds the agent before retrying
    s.agent.followup(`Tidy the files ${HOSTILE}`)
    await s.recovering.promise
    seen.push(await expectActive(page, s.agent))
    await page.waitForSelector('.timeline g.attempt[data-outcome="failed"]')
    expect(await count(page, '.machine .edge.last')).toBeGreaterThan(0)
    expect(await count(page, '.state.last-target')).toBeGreaterThan(0)
    await shot(page, '01-recovering')

    // 2. the retry asked for tools: both reads ran together, the write runs alone; a steer arrives meanwhile
    s.releaseRecovery.open()
    await s.writing.promise
    s.agent.steer('Actually, use the staging folder')
    seen.push(await expectActive(page, s.agent))
    await page.waitForSelector('.timeline g.arrival[data-via="steer"][data-state="pending"]')
    await page.waitForSelector('.timeline g.tool.open[data-call="w1"][data-together="alone"]')
    console.log(`viewer screenshot, a tool-using turn: ${await shot(page, '02-tools')}`)
    // the drawing: labels clear of every state they do not sit inside, edges around the boxes; first the edges shown now, then all
    const shown = await chartGeometry(page)
    expect(shown.labels).toBeGreaterThan(0)
    expect(shown.problems).toEqual([])
    await page.check('#statechart input[type="checkbox"]:near(:text("all transitions"))')
    const every = await chartGeometry(page)
    expect(every.labels).toBeGreaterThan(80)
    expect(every.edges).toBe(every.labels)
    expect(every.problems).toEqual([])
    // a long guard is wrapped and cut, and kept whole for the hover
    const backoff = page.locator('.machine g.edge-label[data-from="running.turn.step.attempt.recovering"][data-to="running.turn.step.attempt.backoff"]')
    expect(await backoff.locator('title').textContent()).toBe('hook.done [isAwaited ∧ isRetry ∧ hasRetryDelay]')
    expect(await backoff.locator('tspan').allTextContents()).toEqual(['hook.done [isAwaited ∧', '  isRetry ∧ hasRetryDelay]'])
    await shot(page, '02b-all-transitions')
    await page.uncheck('#statechart input[type="checkbox"]:near(:text("all transitions"))')

    // 3. the steer was claimed at the next step, whose stream has started and hangs
    s.releaseWrite.open()
    await s.streaming.promise
    seen.push(await expectActive(page, s.agent))
    await page.waitForSelector('.timeline g.arrival[data-via="steer"][data-state="claimed"]')
    await shot(page, '03-streaming')

    // 4. cancel it, then run a plain second turn
    s.agent.cancel({ kind: 'user' })
    await s.agent.whenIdle()
    s.agent.followup('Second turn')
    await s.agent.whenIdle()
    const total = s.agent.session.events.length
    await page.waitForSelector(`body[data-events="${total}"][data-status="idle"]`)
    seen.push(await expectActive(page, s.agent))
    // the lit-up configuration changed at every hold point
    expect(new Set(seen).size).toBe(4)

    // the whole session in view
    await page.click('.timeline button:text("fit")')
    const timeline = page.locator('.timeline')
    await expect.poll(() => count(page, '.timeline g.turn')).toBe(2)
    expect(await timeline.locator('g.turn').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-reason')))).toEqual(['aborted', 'completed'])
    expect(await count(page, '.timeline g.step')).toBe(3)
    // the failed request and its retry in the same step; the cancelled stream interrupted
    expect(await count(page, '.timeline g.attempt[data-outcome="failed"][data-attempt="1"]')).toBe(1)
    expect(await count(page, '.timeline g.attempt.retry[data-outcome="ok"][data-attempt="2"]')).toBe(1)
    expect(await count(page, '.timeline g.attempt[data-outcome="interrupted"]')).toBe(1)
    expect(await count(page, '.timeline rect.stream')).toBeGreaterThanOrEqual(4)
    // lanes: r1 and r2 side by side in one parallel group, w1 alone
    const lanes = await timeline
      .locator('g.tool')
      .evaluateAll((gs) => gs.map((g) => [g.getAttribute('data-call'), g.getAttribute('data-together'), g.getAttribute('data-lane')]))
    expect(lanes).toEqual([
      ['r1', 'parallel', '0'],
      ['r2', 'parallel', '1'],
      ['w1', 'alone', '0'],
    ])
    expect(await count(page, '.timeline rect.group[data-calls="2"]')).toBe(1)
    // inbox: two followups and the steer, each claimed, each entered as a user message
    expect(await timeline.locator('g.arrival').evaluateAll((gs) => gs.map((g) => `${g.getAttribute('data-via')}:${g.getAttribute('data-state')}`))).toEqual([
      'followup:claimed',
      'steer:claimed',
      'followup:claimed',
    ])
    expect(await count(page, '.timeline g.arrival line.enter')).toBe(3)
    // the cancel: when it was asked for, and the turn it ended, with its cause
    expect(await timeline.locator('g.marker[data-type="cancel"] text').textContent()).toBe('cancelled (user)')
    expect(await timeline.locator('g.marker[data-type="cancel-request"] text').textContent()).toBe('cancel requested (user)')
    await shot(page, '04-session')

    // the log: every event counted, few rows in the DOM, filterable by type, linked to the timeline
    await expect.poll(() => page.locator('.log .count').textContent()).toBe(`${total} events`)
    await page.click('.log button:text("none")')
    await expect.poll(() => count(page, '.log .row')).toBe(0)
    await page.check('.log input[data-type="tool/call"]')
    await expect
      .poll(() => page.locator('.log .row .sum').allTextContents())
      .toEqual(['calls read({"path":"a.txt"}) #r1', 'calls read({"path":"b.txt"}) #r2', 'calls write({"path":"c.txt"}) #w1'])
    await page.click('.log .row:has-text("#w1")')
    await page.waitForSelector('.timeline g.tool.selected[data-call="w1"]')
    expect(await page.locator('.details').textContent()).toContain('"callId": "w1"')
    // the statechart shows the configuration the agent was in when that event was appended
    expect(await page.locator('.pin-note').textContent()).toMatch(/^as when #\d+ was appended$/)
    const then = await page.locator('section.machine').getAttribute('data-active')
    expect(then).not.toBe('')
    expect(then).not.toBe(seen[3])
    await shot(page, '05-log-linked')
    await page.click('button.to-live')
    await expect.poll(() => page.locator('section.machine').getAttribute('data-active')).toBe(seen[3])

    // clicking the timeline selects in the log
    await page.click('.log button:text("all")')
    await page.click('.timeline g.turn[data-reason="completed"] rect', { position: { x: 3, y: 40 } })
    const turn2 = s.agent.session.events.findIndex((e) => e.type === 'turn/start' && e.data.turn === 2)
    await page.waitForSelector(`.log .row.selected[data-seq="${turn2}"]`)

    // strings from the log are text, never markup
    await page.fill('.log input.search', 'onerror')
    // the prompt's splice and its user/message, shown as the very characters the log holds
    await expect
      .poll(() => page.locator('.log .row .sum').allTextContents())
      .toEqual([
        expect.stringContaining('followup arrives: “Tidy the files <img src=x onerror="window.__xss=1"><script>'),
        `the user says “Tidy the files ${HOSTILE}”`,
      ])
    expect(await page.evaluate('typeof window.__xss')).toBe('undefined')
    expect(await count(page, 'img, script:not([src])')).toBe(0)
    expect(problems).toEqual([])
    await page.close()
    await s.agent.dispose()
  })

  it('names the waits a person cares about: the backoff before a retry, then a call waiting for approval', async () => {
    const { agent } = approvalScenario()
    const viewer = await serveViewer(agent, { print: false, title: 'approval' })
    viewers.push(viewer)
    const { page, problems } = await open(viewer.url)
    agent.followup('Ship it')
    await expect.poll(() => agent.pendingApprovals.length).toBe(1)
    await expectActive(page, agent)
    // the wait is named on the timeline, and above it as what the agent is doing now
    const wait = page.locator('.timeline g.wait[data-wait="approval"][data-state="waiting"]')
    await expect.poll(() => wait.locator('text').textContent()).toBe('waiting for approval of deploy…')
    expect(await page.locator('.timeline .now').textContent()).toBe('waiting for approval of deploy: Deploy to production?')
    // the backoff before the retry, from llm/retry to llm/retry-started
    expect(await page.locator('.timeline g.wait[data-wait="backoff"][data-state="done"] text').textContent()).toBe('backing off 300 ms before retry 1')
    expect(await count(page, '.machine g.state.active.leaf[data-key="awaitingApproval"]')).toBe(1)
    expect(await page.locator('.pin-note').textContent()).toBe('live · waiting for approval of deploy')
    console.log(`viewer screenshot, an approval wait: ${await shot(page, '07-approval-wait')}`)

    agent.approve('d1')
    await agent.whenIdle()
    await page.waitForSelector(`body[data-events="${agent.session.events.length}"][data-status="idle"]`)
    await expect.poll(() => page.locator('.timeline g.wait[data-wait="approval"]').getAttribute('data-state')).toBe('done')
    expect(await page.locator('.timeline .now').textContent()).toBe('')
    // the rows read as sentences
    const sentence = async (type: string) => {
      await page.click('.log button:text("none")')
      await page.check(`.log input[data-type="${type}"]`)
      await expect.poll(() => count(page, `.log .row:not([data-type="${type}"])`)).toBe(0)
      await page.waitForSelector(`.log .row[data-type="${type}"]`)
      return page.locator(`.log .row[data-type="${type}"] .sum`).allTextContents()
    }
    expect(await sentence('llm/retry')).toEqual(['the request to scripted failed (RATE_LIMIT: rate limited); retry 1 in 300 ms'])
    expect(await sentence('tool/approval-request')).toEqual(["deploy #d1 waits for a person's approval: “Deploy to production?”"])
    expect(await sentence('tool/approval-answer')).toEqual(['a person approved deploy #d1; it runs'])
    expect(await sentence('tool/result')).toEqual(['deploy #d1 returns “deployed to production”'])
    expect(problems).toEqual([])
    await page.close()
    await agent.dispose()
  })

  it('nests a subagent under the call that made it, opens its statechart and log, and rolls its tokens up', async () => {
    const { agent, childWorking, releaseChild } = delegationScenario()
    const viewer = await serveViewer(agent, { print: false, title: 'planner' })
    viewers.push(viewer)
    const { page, problems } = await open(viewer.url)
    agent.followup('Plan a trip to Lisbon')
    await childWorking.promise
    const [child] = subagentsOf(agent)
    expect(child.sessionId).toBe('research-trains')
    // the child's turn runs inside the parent's call r1, drawn under it
    const nested = page.locator('.timeline g.subagent[data-call="r1"][data-session="research-trains"]')
    await expect.poll(() => nested.getAttribute('data-state')).toBe('running')
    await expect.poll(() => nested.getAttribute('data-steps')).toBe('1')
    expect(await page.locator('.subagents li[data-call="r1"]').textContent()).toContain('research #r1 → research-trains: running')
    await shot(page, '08-subagent-nested')

    // click through: the child's own statechart, lit where the child is, and its log
    const childPage = (await open(new URL((await page.locator('.subagents a.open-child').getAttribute('href')) ?? '', viewer.url).href)).page
    await expect.poll(() => childPage.locator('section.machine').getAttribute('data-active')).toBe(leafPaths(child.actor.getSnapshot().value).join(' '))
    expect(await childPage.locator('.machine g.state.active.leaf').count()).toBeGreaterThan(0)
    expect(await childPage.locator('header .parent').textContent()).toBe('subagent of planner (research #r1) ↑')
    await expect
      .poll(() => childPage.locator('.log .row[data-type="tool/call"] .sum').allTextContents())
      .toEqual(['calls search({"q":"trains to Lisbon"}) #q1'])
    await shot(childPage, '09-subagent-child')

    releaseChild.open()
    await agent.whenIdle()
    await page.waitForSelector(`body[data-events="${agent.session.events.length}"][data-status="idle"]`)
    await expect.poll(() => nested.getAttribute('data-state')).toBe('completed')
    await expect.poll(() => childPage.locator('section.machine').getAttribute('data-active')).not.toBe('')
    // usage rolls up: the parent's two requests and the child's two, the child's share said apart
    const usage = page.locator('header .usage')
    await expect.poll(() => usage.textContent()).toBe('480 tokens, 240 of them by 1 subagent')
    expect(await page.locator('.subagents li[data-call="r1"]').textContent()).toContain('research-trains: completed, 2 steps, 240 tokens')
    expect(problems).toEqual([])
    await childPage.close()
    await page.close()
    await agent.dispose()
  })

  it('opens a 10,000-event stored session and keeps the DOM small', async () => {
    const events = await largeSession(10_000)
    const turns = events.filter((e) => e.type === 'turn/start').length
    expect(events.filter((e) => e.type === 'turn/end' && e.data.reason.kind === 'completed')).toHaveLength(turns)
    const viewer = await serveViewer(events, { print: false, title: 'large session' })
    viewers.push(viewer)
    const { page, problems } = await open(viewer.url)
    await page.waitForSelector(`body[data-events="${events.length}"][data-connection="ended"]`)
    await expect.poll(() => page.locator('.log .count').textContent()).toBe(`${events.length} events`)
    expect(await page.locator('.timeline').getAttribute('data-turns')).toBe(String(turns))
    // virtualised: a screenful of rows and of timeline items, not ten thousand
    expect(await count(page, '.log .row')).toBeLessThan(60)
    expect(await count(page, '.timeline g.turn')).toBeLessThan(turns)
    expect(await page.evaluate('document.getElementsByTagName("*").length')).toBeLessThan(4000)
    // the far end is one scroll away, and selecting there moves the timeline to it
    await page.locator('.log-list').evaluate((list) => (list.scrollTop = list.scrollHeight))
    await page.click(`.log .row[data-seq="${events.length - 1}"]`)
    await page.waitForSelector(`.timeline g.turn[data-turn="${turns}"].selected`)
    await shot(page, '06-large-session')
    expect(problems).toEqual([])
    await page.close()
  })
})
