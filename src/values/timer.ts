// The one limit every timer of the library shares.

/** The longest delay setTimeout honours (2^31 - 1 ms, about 24.8 days; a longer one fires at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1
