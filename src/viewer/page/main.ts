// The viewer page: connects to its server's live channel (Server-Sent Events,
// with the token from the page's own URL), feeds the session model, and keeps
// the statechart, the timeline, the log and the details in step. Selecting an
// event anywhere selects it everywhere; in a live session the statechart can
// also show the configuration the machine was in when that event was appended.
import type { Configuration, ServerMessage, TransitionMark } from './protocol.js'
import { el } from './dom.js'
import { LogView } from './log.js'
import { SessionModel } from './model.js'
import { eventLabel, StatechartView } from './statechart.js'
import { TimelineView } from './timeline.js'

const MAX_MARKS = 500

const body = document.body
const params = new URLSearchParams(location.search)
const token = params.get('token')
/** The session this page shows: the server's own, or a subagent's it links to. */
const sessionParam = params.get('session')

/** The page's address for another session of the same server (the token kept). */
function sessionHref(sessionId: string): string {
  const next = new URLSearchParams()
  if (token) next.set('token', token)
  next.set('session', sessionId)
  return `?${next.toString()}`
}

/** The live channel of one session. */
function channelUrl(sessionId: string | null, from = 0): string {
  const query = new URLSearchParams()
  if (token) query.set('token', token)
  if (sessionId !== null) query.set('session', sessionId)
  if (from > 0) query.set('from', String(from))
  const text = query.toString()
  return `/api/live${text ? `?${text}` : ''}`
}

let model = new SessionModel()
const configs = new Map<number, Configuration>()
const marks: TransitionMark[] = []
let liveConfig: number | null = null
/** The event whose configuration the statechart shows instead of the live one. */
let pinned: number | null = null
let mode: 'live' | 'session' | 'stored' | null = null
let ended = false

// ---- layout ---------------------------------------------------------------

const titleEl = el('span', { class: 'title' }, 'agentchart viewer')
const modeEl = el('span', { class: 'badge mode' }, '…')
const statusEl = el('span', { class: 'badge status' }, '')
const connEl = el('span', { class: 'badge conn' }, 'connecting')
const countEl = el('span', { class: 'badge count' }, '0 events')
const usageEl = el('span', { class: 'badge usage', title: "tokens over the session, the subagents' included" }, '')
const parentEl = el('a', { class: 'badge parent', hidden: '' }, '')
body.append(el('header', {}, titleEl, parentEl, modeEl, statusEl, countEl, usageEl, connEl))

const chartRoot = el('div', { class: 'chart-body' })
const pinNote = el('span', { class: 'pin-note' })
const liveButton = el('button', { type: 'button', class: 'to-live', hidden: '' }, 'back to live')
liveButton.addEventListener('click', () => {
  pinned = null
  renderChart()
})
const allEdges = el('input', { type: 'checkbox' })
const chart = new StatechartView(chartRoot)
allEdges.addEventListener('change', () => (chart.showAll = allEdges.checked))
const chartFollow = el('input', { type: 'checkbox', checked: '' })
chartFollow.addEventListener('change', () => (chart.follow = chartFollow.checked))
chart.onFollow = (following) => (chartFollow.checked = following)
const zoomButton = (label: string, title: string, action: () => void) => {
  const b = el('button', { type: 'button', title, class: `zoom` }, label)
  b.addEventListener('click', action)
  return b
}
const chartPanel = el(
  'section',
  { class: 'panel chart', id: 'statechart' },
  el(
    'div',
    { class: 'toolbar' },
    el('strong', {}, 'Statechart'),
    pinNote,
    liveButton,
    zoomButton('−', 'zoom out', () => chart.setZoom(chart.zoom / 1.25)),
    zoomButton('+', 'zoom in', () => chart.setZoom(chart.zoom * 1.25)),
    zoomButton('fit', 'fit the width of the panel', () => chart.fit()),
    zoomButton('1:1', 'actual size', () => chart.setZoom(1)),
    el('label', { title: 'keep the active state in view' }, chartFollow, ' follow'),
    el('label', {}, allEdges, ' all transitions'),
  ),
  chartRoot,
)

const transitionsList = el('ol', { class: 'transitions', reversed: '' })
const details = el('pre', { class: 'details' }, 'Select an event in the log or on the timeline.')
const detailsHead = el('div', { class: 'toolbar' }, el('strong', {}, 'Event'))
const subagentsList = el('ul', { class: 'subagents' })
const subagentsHead = el('div', { class: 'toolbar', hidden: '' }, el('strong', {}, 'Subagents'))
const side = el(
  'section',
  { class: 'panel side' },
  el('div', { class: 'toolbar' }, el('strong', {}, 'Recent transitions')),
  transitionsList,
  subagentsHead,
  subagentsList,
  detailsHead,
  details,
)

const timelineRoot = el('section', { class: 'panel timeline', id: 'timeline' })
const logRoot = el('section', { class: 'panel log', id: 'log' })
body.append(el('main', {}, el('div', { class: 'top' }, chartPanel, side), timelineRoot, logRoot))

const timeline = new TimelineView(
  timelineRoot,
  model,
  (seq) => select(seq),
  (sessionId) => location.assign(sessionHref(sessionId)),
)
const log = new LogView(logRoot, model, (seq) => select(seq))

// ---- selection -------------------------------------------------------------

function select(seq: number): void {
  const event = model.events[seq]
  if (!event) return
  body.dataset.selected = String(seq)
  log.select(seq)
  timeline.select(seq, model.owner[seq] ?? 0)
  const text = JSON.stringify(event, null, 2)
  details.textContent = text.length > 200_000 ? `${text.slice(0, 200_000)}\n… (${text.length} characters)` : text
  if (model.eventConfigs[seq] !== undefined) pinned = seq
  renderChart()
}

function renderChart(): void {
  const configId = pinned !== null ? model.eventConfigs[pinned] : liveConfig
  const config = configId === undefined || configId === null ? undefined : configs.get(configId)
  const trail = pinned !== null ? marks.filter((m) => m.seq <= pinned! + 1).slice(-5) : marks.slice(-5)
  chart.show(config?.actors ?? [], trail)
  body.dataset.config = configId === null || configId === undefined ? '' : String(configId)
  liveButton.hidden = pinned === null
  // live, the state a person may be waiting on is named beside the chart too
  const waiting = model.waiting
  const live = waiting ? `live · ${waiting.label}` : 'live'
  pinNote.textContent =
    pinned !== null ? `as when #${pinned} was appended` : mode === 'live' ? (ended ? 'final state' : live) : 'no running agent: definitions only'
}

function renderTransitions(): void {
  const items = marks.slice(-12).reverse()
  transitionsList.replaceChildren(
    ...items.map((m) => {
      const to = m.targets.length > 0 ? ` → ${m.targets.map((t) => t || '(root)').join(', ')}` : ' (stays)'
      return el('li', { 'data-event': m.event, title: `after #${m.seq - 1}` }, el('code', {}, eventLabel(m.event)), ` ${m.source || '(root)'}${to}`)
    }),
  )
}

function renderHeader(): void {
  countEl.textContent = `${model.events.length} events`
  body.dataset.events = String(model.events.length)
  const usage = model.usage
  const share = usage.subagents > 0 ? `, ${usage.subagentTokens} of them by ${usage.subagents} subagent${usage.subagents === 1 ? '' : 's'}` : ''
  usageEl.textContent = usage.totalTokens > 0 ? `${usage.totalTokens} tokens${share}` : ''
  usageEl.dataset.total = String(usage.totalTokens)
  usageEl.dataset.subagents = String(usage.subagentTokens)
  const parent = model.parent
  parentEl.hidden = parent === null
  if (parent) {
    parentEl.textContent = `subagent of ${parent.sessionId} (${parent.tool} #${parent.callId}) ↑`
    parentEl.setAttribute('href', sessionHref(parent.sessionId))
  }
}

// ---- subagents ----------------------------------------------------------------

/** The children's logs, each read from its own live channel, for the timeline's nested rows. */
const children = new Map<string, { model: SessionModel; source: EventSource }>()

function follow(sessionId: string): void {
  if (children.has(sessionId)) return
  const child = { model: new SessionModel(), source: new EventSource(channelUrl(sessionId)) }
  children.set(sessionId, child)
  timeline.children.set(sessionId, child.model)
  child.source.addEventListener('message', (event: MessageEvent<string>) => {
    let message: ServerMessage
    try {
      message = JSON.parse(event.data) as ServerMessage
    } catch {
      return
    }
    if (message.kind === 'events') {
      child.model.append(message.events)
      timeline.update()
      renderSubagents()
    } else if (message.kind === 'end') child.source.close()
  })
}

function renderSubagents(): void {
  subagentsHead.hidden = model.subagents.length === 0
  subagentsList.replaceChildren(
    ...model.subagents.map((link) => {
      const child = children.get(link.sessionId)?.model
      const turn = child?.turns.at(-1)
      const end = link.end ?? (turn ? (turn.reason?.kind ?? 'running') : 'starting')
      const steps = link.steps ?? child?.steps.length ?? 0
      const tokens = link.tokens ?? child?.usage.totalTokens ?? 0
      const open = el('a', { href: sessionHref(link.sessionId), class: 'open-child', 'data-session': link.sessionId }, 'statechart & log →')
      return el(
        'li',
        { 'data-call': link.callId, 'data-session': link.sessionId, 'data-end': end },
        el('code', {}, `${link.tool} #${link.callId}`),
        ` → ${link.sessionId}: ${end}, ${steps} step${steps === 1 ? '' : 's'}, ${tokens} tokens `,
        children.has(link.sessionId) ? open : el('span', { class: 'muted' }, '(log not served)'),
      )
    }),
  )
}

// ---- the live channel ---------------------------------------------------------

function onMessage(message: ServerMessage): void {
  switch (message.kind) {
    case 'hello': {
      mode = message.mode
      body.dataset.mode = message.mode
      modeEl.textContent = message.mode === 'live' ? 'live agent' : message.mode === 'session' ? 'live log' : 'stored · read-only'
      titleEl.textContent = `agentchart · ${message.title}`
      document.title = `agentchart · ${message.title}`
      if (message.from === 0 && model.events.length > 0) {
        model = new SessionModel()
        timeline.setModel(model)
        log.setModel(model)
      }
      if (message.mode === 'stored' && model.events.length === 0) {
        timeline.follow = false
        log.follow = false
      }
      for (const c of message.charts) chart.addChart(c)
      renderChart()
      break
    }
    case 'chart':
      chart.addChart(message.chart)
      break
    case 'configs':
      for (const c of message.configs) configs.set(c.id, c)
      break
    case 'notes':
      model.note(message.arrivals, message.cancels)
      timeline.update()
      break
    case 'links':
      for (const link of message.links) {
        model.link(link.callId, link.sessionId, link.tool)
        follow(link.sessionId)
      }
      timeline.update()
      renderSubagents()
      break
    case 'events': {
      const first = model.events.length
      model.append(message.events, message.configs)
      // the waits the log does not record, placed at the events appended in them
      for (let seq = first; seq < model.events.length; seq++) {
        const id = model.eventConfigs[seq]
        if (id !== undefined) model.liveState(configs.get(id)?.actors.flatMap((a) => a.active) ?? [], seq)
      }
      timeline.update()
      log.update()
      renderHeader()
      renderSubagents()
      if (pinned === null) renderChart()
      break
    }
    case 'state': {
      liveConfig = message.config
      model.liveState(configs.get(message.config)?.actors.flatMap((a) => a.active) ?? [])
      timeline.update()
      statusEl.textContent = message.actor === 'active' ? message.status : `agent ${message.actor}`
      body.dataset.status = message.status
      for (const m of message.transitions) if (marks.length === 0 || m.n > marks[marks.length - 1].n) marks.push(m)
      if (marks.length > MAX_MARKS) marks.splice(0, marks.length - MAX_MARKS)
      renderTransitions()
      renderChart()
      break
    }
    case 'end':
      ended = true
      source.close()
      connEl.textContent = message.reason === 'stored session' ? 'loaded' : 'closed'
      body.dataset.connection = 'ended'
      renderChart()
      break
  }
}

// a live session's open items reach "now": the timeline's clock ticks while the channel is open
setInterval(() => timeline.setNow(mode !== 'stored' && !ended ? Date.now() : null), 500)

const source = new EventSource(channelUrl(sessionParam))
source.addEventListener('open', () => {
  connEl.textContent = 'connected'
  body.dataset.connection = 'open'
})
source.addEventListener('error', () => {
  if (ended) return
  connEl.textContent = source.readyState === EventSource.CLOSED ? 'refused' : 'reconnecting'
  body.dataset.connection = source.readyState === EventSource.CLOSED ? 'refused' : 'reconnecting'
})
source.addEventListener('message', (event: MessageEvent<string>) => {
  let message: ServerMessage
  try {
    message = JSON.parse(event.data) as ServerMessage
  } catch {
    return
  }
  onMessage(message)
})
