// The one door of @pixelfleet/common: what every process shares and no protocol owns. The browser
// page imports the clock alone, as `@pixelfleet/common/clock` (dependency-free).
export { systemClock, ManualClock, type Clock, type TimerHandle } from './clock';
export { Listeners, type EventMap, type ListenerErrorHandler } from './listeners';
export { chooseLogFormat, logDestination, type LogFormat } from './log-format';
export { createLogger, createRequestLoggerFactory, redactSecrets, redactUrl, SECRET_KEYS, type Logger } from './logger';
export { backoffDelayMs, DEFAULT_BACKOFF, type BackoffOptions } from './backoff';
export { TokenBucket, type RateLimitOptions } from './token-bucket';
export { escapeHtml } from './html-text';
export { SampledLog, SAMPLED_LOG_INTERVAL_MS } from './sampled-log';
export { weakSecretReason, MIN_SECRET_CHARS, MIN_SECRET_BITS, PLACEHOLDER_MARK, SECRET_ADVICE } from './secret-strength';
export {
  clientChannel,
  crossesNetworkInPlaintext,
  describeTlsFailure,
  hostOf,
  inspectTls,
  isLoopbackHost,
  probeTls,
  usesTls,
  TlsFileError,
  TLS_PROBE_TIMEOUT_MS,
  type ClientTlsSettings,
  type TlsInspection,
} from './tls';
export { ConfigError, envNameForKey, loadConfig, type ConfigLoad, type EnvLeafKind } from './config-loader';
export { command, group, runCommandLine, CliUsageError, type CliCommand, type CliIo, type CliOutcome, type CliProgram, type FlagValues } from './command-line';
