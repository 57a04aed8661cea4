// The analytics API's widest window (spec: Limits), in days: the one number the API's window check
// and the default telemetry retention (which must outlast it) both read.
export const ANALYTICS_WINDOW_DAYS = 92;
