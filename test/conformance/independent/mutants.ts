// The mutants of the independent loop: each one a named, one-line deviation
// in ./loop.ts from one rule of docs/conformance.md (or one [core] entry of
// the catalogue). The mutation harness (../mutation.ts) runs the suite
// against each and counts it caught when at least one scenario fails.

export interface Mutant {
  /** What `options.mutation` is set to; the loop deviates where it tests this name. */
  name: string
  /** The rule it breaks: a section of docs/conformance.md. */
  rule: string
  /** The catalogue entries (docs/behaviours.md) the rule stands for. */
  ids: readonly string[]
  /** The deviation, in one line. */
  deviation: string
  /** Set on a mutant that no log can tell from the loop: why (it is listed, not counted). */
  equivalent?: string
}

const m = (name: string, rule: string, ids: string, deviation: string): Mutant => ({ name, rule, ids: ids.split(' '), deviation })

export const MUTANTS = [
  // ---- inbox (7.1) ----
  m('send-start-zero', '7.1', 'IN-2', "a send's splice starts at 0, not at the list's length"),
  m('send-duplicate-accepted', '4.3', 'IN-6', 'a send of an id already pending is accepted'),
  m('waking-send-keeps-target', '7.1', 'CX-12', 'a waking send made after the cancel keeps its own target instead of going to next-turn'),
  m('cancel-latch-lost', '7.8', 'CX-13', 'a waking send during a cancelled activity does not latch a new one'),
  m('remove-without-outcome', '7.1', 'IN-3', 'a remove splice has no outcome "canceled"'),
  m('replace-duplicate-accepted', '4.3', 'IN-6', 'a replace by an id pending elsewhere is accepted'),
  m('splice-negative-from-zero', '7.1', 'IN-3', 'a negative splice start counts from 0, not from the end'),
  m('clear-next-turn-first', '7.1', 'IN-5 CX-3', 'a clear empties next-turn before next-step'),
  m('keep-inbox-ignored', '5.2', 'CX-3', 'a cancel with keepInbox: true clears the inbox anyway'),
  m('cancel-keeps-inbox', '5.2', 'CX-3', 'a cancel without keepInbox leaves the inbox as it is'),
  m('claim-all-prompts', '7.1', 'IN-9', 'a turn boundary claims every next-turn prompt, not the first'),
  m('claim-prompt-first', '7.1', 'IN-9', 'a claim takes the next-turn prompt before next-step'),
  m('contexts-to-next-turn', '7.1', 'TL-12', "a result's additional contexts are inserted into next-turn"),
  m('contexts-dropped', '7.6', 'TL-12', "a result's additional contexts are never inserted"),
  m('dispose-keeps-inbox', '7.8', 'CX-17', 'dispose() keeps the parked items'),
  // ---- cancels (4.4, 7.8) ----
  m('cause-always-user', '7.2', 'CX-1 CX-5', 'turn/end{aborted} names the cause {kind: "user"} whatever the cancel said'),
  m('cause-reason-dropped', '7.2', 'CX-1', "the cause's reason is left out of turn/end{aborted}"),
  m('later-cause-wins', '7.2', 'CX-2', 'a second cancel replaces the cause of the first'),
  m('no-checkpoint-before-turn-start', '4.4', 'TU-3', 'a cancel landing before turn/start still opens the turn'),
  m('no-checkpoint-after-turn-start', '4.4', 'CX-6', 'a cancel landing right after turn/start still claims and proposes'),
  m('cancel-before-messages', '4.4', 'CX-6', "a listener cancel on step/start lands before the step's user/message events"),
  m('cancel-before-context', '4.4', 'CX-6', 'a listener cancel on request/header lands before request/context'),
  m('no-checkpoint-before-call', '4.4 7.7', 'TL-14', 'a cancel landing at the classification of a call still starts it'),
  m('no-checkpoint-after-step-end', '4.4', 'CX-6', 'a cancel landing after step/end still runs turn-stopping'),
  m('no-visible-prefix', '7.4', 'CX-7', 'a cancelled stream that showed text appends no assistant/message'),
  m('no-interrupted-flag', '7.4', 'CX-7', 'the message of a cancelled stream has no interrupted: true'),
  m('interrupted-inside-message', '7.4', 'CX-7', 'interrupted: true goes into the message, not beside it in data'),
  m('reasoning-not-shown', '7.4', 'CX-7', 'only text blocks count as shown text; a cancel after reasoning alone keeps nothing'),
  m('whitespace-shown', '7.4', 'CX-7', 'a cancelled stream that showed only whitespace still appends a message'),
  m('interrupted-keeps-empty', '7.4', 'CX-7', 'an interrupted message keeps its empty text blocks'),
  m('interrupted-text-only', '7.4', 'CX-7', 'an interrupted message drops its reasoning blocks'),
  m('interrupted-keeps-calls', '7.4', 'CX-7', 'an interrupted message keeps the tool-call blocks seen so far'),
  m('error-beats-cancel', '7.9', 'CX-5', 'a refused append after a cancel ends the turn error, not aborted'),
  // ---- turns and steps (7.2, 7.8) ----
  m('step-after-reject', '7.2', 'TU-5 TU-6', 'a step is opened after a rejected proposal'),
  m('reject-completes', '7.2', 'TU-5', 'a rejected proposal ends the turn completed, not blocked'),
  m('empty-after-continue-ends', '7.2', 'TU-9', 'an empty proposal after a tool step ends the turn'),
  m('max-tokens-not-sticky', '7.2', 'TU-12', 'a turn ends completed after a max-tokens step followed by a completed one'),
  m('turn-stopping-with-next-step', '7.2', 'TU-10', 'turn-stopping runs even when next-step is not empty'),
  m('lost-steer', '7.2', 'IN-12 TU-10', 'a steer made while a turn runs is dropped'),
  m('steer-ignored-at-stop', '7.2', 'TU-10', 'a steer by turn-stopping does not start another step'),
  m('max-steps-one-late', '7.2', 'TU-16', 'the step limit lets one step more run'),
  m('max-steps-without-limit', '7.2', 'TU-16', 'turn/end{max-steps} leaves out the limit'),
  m('no-go-on-after-max-tokens', '7.8', 'PH-4', 'a turn ended max-tokens does not go straight on to pending work'),
  m('goes-on-after-error', '7.8', 'PH-4', 'a turn ended error goes straight on to pending work'),
  m('listener-code-wrong', '7.5', 'HK-4', 'a throwing listener is recorded with code "LISTENER"'),
  m('turn-stopping-throw-completes', '7.5', 'HK-5', 'a throwing turn-stopping listener ends the turn completed'),
  m('step-end-refused-turn-end', '7.9', 'TU-15 SS-12', 'a refused step/end is followed by turn/end{error}'),
  m('turn-start-refused-number-used', '7.9', 'TU-4', 'a refused turn/start uses up its turn number'),
  m('user-message-refused-goes-on', '7.9', 'TU-14', 'a refused user/message still lets the request run'),
  // ---- requests (7.3, 7.5) ----
  m('resume-header-initial', '7.3', 'RQ-4', 'the first header over a log that held one says initial, not resume'),
  m('context-every-attempt', '7.3', 'RQ-4', 'every attempt appends request/context, changed or not'),
  m('no-route-logs-records', '7.3', 'RQ-3', 'a request with no route logs request/header and request/context first'),
  m('no-route-code', '7.5', 'RQ-3', 'a request with no route fails with code "UNKNOWN"'),
  m('retry-numbered-from-zero', '5.9', 'RQ-14', 'llm/retry counts its retry from 0'),
  m('retry-later-not-started', '5.9', 'RQ-14', 'a retry after its backoff appends no llm/retry-started'),
  m('give-up-code-unknown', '7.5', 'RQ-9', "a given-up failure is logged with code UNKNOWN, not the finish's failure"),
  m('chunk-refusal-recovered', '7.9', 'RQ-7', 'a refused assistant/chunk is offered to agent/request-error'),
  m('failed-attempt-anchored', '7.4', 'RQ-11', 'a failed attempt appends an assistant/message'),
  // ---- stream assembly (7.4) ----
  m('block-end-not-authoritative', '7.4', 'ST-7', 'a closed block is the concatenation of its deltas, not its block-end block'),
  m('deltas-after-close', '7.4', 'ST-7', 'deltas after a block-end are appended to the closed block'),
  m('second-close-wins', '7.4', 'ST-7', 'a block closed twice is its second block-end block'),
  m('no-finish-is-error', '7.4', 'ST-7', 'a stream with no finish fails the attempt'),
  m('max-tokens-keeps-calls', '7.4', 'ST-9', 'a max-tokens finish keeps the tool-call blocks'),
  m('max-tokens-runs-calls', '7.4', 'ST-9', 'the calls of a max-tokens stream run'),
  m('tool-calls-finish-continues', '7.4', 'ST-10', 'a tool-calls finish without calls makes a continue step'),
  m('stop-finish-ignores-calls', '7.4', 'ST-10', 'the calls of a stop finish do not run'),
  m('first-usage-wins', '7.4', 'ST-7', 'the first usage chunk wins, not the last'),
  m('blocks-by-index', '7.4', 'ST-7', 'blocks are ordered by index, not first seen'),
  m('empty-anchor-skipped', '7.4', 'ST-8', 'an empty answer appends no assistant/message'),
  // ---- tools (7.6, 7.7) ----
  m('thrown-without-prefix', '7.6', 'TL-8', 'a body that throws gives its message without "Error: "'),
  m('thrown-not-error', '7.6', 'TL-8', 'a body that throws gives isError: false'),
  m('deny-skips-post', '7.6', 'TL-9', 'a denied call skips post-execute'),
  m('deny-code-wrong', '7.6', 'TL-9', 'a denied call has code "DENIED_BY_HOOK"'),
  m('pre-throw-runs-post', '7.6', 'TL-10', 'a pre-execute that throws does not skip post-execute'),
  m('block-not-error', '7.6', 'TL-10', 'a post-execute block gives isError: false'),
  m('block-keeps-content', '7.6', 'TL-10', "a post-execute block keeps the body's content instead of the feedback"),
  m('block-keeps-contexts', '7.6', 'TL-10 TL-12', "a post-execute block keeps the body's additional contexts"),
  m('replace-ignored', '7.6', 'TL-10', 'a post-execute accept with content keeps the old content'),
  m('replace-clears-error', '7.6', 'TL-10', 'a post-execute accept with content sets isError: false'),
  m('post-throw-keeps-outcome', '7.6', 'TL-10', 'a post-execute that throws keeps the outcome it was given'),
  m('concludes-ignored', '7.6', 'TL-13', 'concludesTurn is ignored'),
  m('concludes-despite-block', '7.6', 'TL-13', 'a body that concluded the turn still concludes it after a post-execute block'),
  m('after-abort-kept', '7.6', 'TL-15', 'a body that returns after the abort keeps its result'),
  m('after-abort-drops-contexts', '7.6', 'TL-15', 'a body that returns after the abort loses its additional contexts'),
  m('thrown-after-abort-aborted', '7.6', 'TL-15', 'a body that throws after the abort is recorded as aborted, not as its error'),
  m('deny-after-abort-denied', '7.6', 'TL-16', 'a pre-execute that denies after the abort gives the denial, not ABORTED_BEFORE_DISPATCH'),
  m('pre-throw-after-abort-aborted', '7.6', 'TL-10 TL-16', 'a pre-execute that throws after the abort gives ABORTED_BEFORE_DISPATCH, not its error'),
  m('no-synthetic-pairs', '7.7', 'TL-14', 'calls that never started after the abort get no synthetic pair'),
  m('synthetic-code-wrong', '7.6', 'TL-14', 'a synthetic pair says code "ABORTED"'),
  m('ask-without-approver-runs', '7.6', 'TL-18', 'an ask with no approver configured runs the body'),
  m('approval-deny-reason-lost', '7.7', 'TL-18', "a person's denial is logged without its reason"),
  m('approval-cancel-skips-post', '7.6', 'TL-18', 'a call aborted while it waited for approval skips post-execute'),
  m('parallel-as-exclusive', '7.7', 'TL-5', 'a parallel-safe call is classified exclusive'),
  m('exclusive-as-parallel', '7.7', 'TL-5', 'an exclusive call is classified parallel-safe'),
  m('pool-unbounded', '7.7', 'TL-4', 'a pool takes calls beyond maxParallelToolCalls'),
  m('scheduler-failure-goes-on', '7.9', 'TL-17', 'a refused tool/call does not stop the dispatch side'),
  m('result-cites-nothing', '7.6', 'TL-8', 'tool/result has no sourceEventSeqs'),
  // ---- seed, repair, forks (7.9, 5.17, 5.18) ----
  m('repair-no-results', '7.9', 'RS-4', 'repair closes the open step without results for its calls'),
  m('repair-all-unknown', '3', 'RS-5', 'a call only named by the anchor gets the unknown-outcome result, not the never-started one'),
  m('repair-completes', '7.9', 'RS-4', 'a repaired turn ends completed, not interrupted'),
  m('repair-refusal-goes-on', '7.9', 'RS-4', 'a refused repair closer does not stop the later ones'),
  m('inherited-splices', '5.17', 'IN-14', 'a fork replays the splices of its seed as its own inbox'),
  m('fork-inside-turn', '5.17', 'SS-14', 'a fork inside an open turn is made'),
  m('fork-seed-length', '5.17', 'SS-14', "a fork's marker says seedLength upTo + 1"),
  // ---- compaction (7.10) ----
  m('overflow-unrecovered', '7.10', 'CP-6', 'CONTEXT_WINDOW_EXCEEDED is not met with a compaction'),
  m('overflow-every-attempt', '7.10', 'CP-6', 'every overflow of a step is met with a compaction, not only the first'),
  {
    ...m('nothing-to-compact-not-counted', '7.10', 'CP-6', "an overflow compaction with nothing to compact does not count as the step's one"),
    // no log tells it from the loop: within a step the surface does not change between attempts (a failed attempt
    // appends no message, and the auto check runs only before a step), so a second overflow finds nothing to compact
    // again and goes on to agent/request-error exactly as when the first counted
    equivalent: 'the surface cannot change between two attempts of one step, so the second measure finds nothing to compact either',
  },
  m('auto-threshold-strict', '7.10', 'CP-1', 'auto compacts when the estimate equals the threshold'),
  m('auto-ignores-entering', '7.10', 'CP-1', 'the entering messages are not measured'),
  m('summary-without-marker', '7.10', 'CP-2', 'a summary message has no marker line'),
  m('empty-summary-accepted', '7.10', 'CP-3', 'a summary of only whitespace replaces the range'),
  m('tail-starts-at-result', '7.10', 'CP-2', 'the kept tail may start with a tool result'),
  m('tokens-after-ignores-summary', '7.10', 'CP-2', "tokensAfter leaves out the summary's own estimate"),
  m('maintenance-running', '7.8', 'MT-1', 'a maintenance job reports the status running, and a listener cancel on it lands on the job'),
] as const satisfies readonly Mutant[]

export type Mutation = (typeof MUTANTS)[number]['name']
