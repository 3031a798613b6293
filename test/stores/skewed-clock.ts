// Preloaded (`--import`) into a child process to step its wall clock:
// Date.now runs AGENTCHART_TEST_CLOCK_SKEW_MS ahead (negative: behind).
const skew = Number(process.env.AGENTCHART_TEST_CLOCK_SKEW_MS ?? 0)
const realNow = Date.now.bind(Date)
Date.now = () => realNow() + skew
