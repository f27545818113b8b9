// verification.driftInterval as the schema reads it: how often each update stage's drift check
// (lib/pipeline/drift.ts) runs again, or "off". Its own file so schema.ts stays within its size.
import { z } from "zod";

/** A duration as the schema writes it ("10s", "5m", "1h"), in seconds. */
export const durationSeconds = (d: string) =>
  Number(d.slice(0, -1)) * { s: 1, m: 60, h: 3600 }[d.slice(-1) as "s" | "m" | "h"];

/** `verification.driftInterval` turning the drift checks off. */
export const DRIFT_OFF = "off";
/** The longest drift interval: a week. */
const DRIFT_MAX_SECONDS = 168 * 3600;
const DRIFT_ALLOWED = `must be a duration from "1m" to "168h", such as "30m" or "1h", or "${DRIFT_OFF}" for no drift checks`;
/** PKO runs a Stack at most once a minute (v2.9.0 stack_controller.go resyncFreq): less would not be what runs. */
export const driftInterval = z
  .string()
  .refine(
    (d) =>
      d === DRIFT_OFF ||
      (/^\d+(s|m|h)$/.test(d) && durationSeconds(d) >= 60 && durationSeconds(d) <= DRIFT_MAX_SECONDS),
    DRIFT_ALLOWED,
  )
  .default("1h");
