// The package's one error class, thrown by every export of every entry.

/** What went wrong. */
export type ErrorKind =
  | "messages"    // the conversation is not one of its format; `path` names index and field
  | "options"     // an option or another argument is wrong: `options.format`, `text`, `limit`
  | "encoding"    // an unknown encoding name, or one this entry was built without
  | "model"       // an unknown model name where its encoding is needed (countTokens)
  | "store"       // the store threw, rejected or returned something that is not a value
  | "timeout"     // the store did not settle within `timeoutMs`
  | "notFound"    // no offloaded output has that id
  | "corrupt"     // the stored output does not match what was saved
  | "pattern"     // the search pattern does not compile
  | "busy"        // a ContextKeeper prepare of the session is running (onBusy: "error")
  | "internal";   // a defect of context-keeper, not of the input

/**
 * The one error class of context-keeper. It extends `Error` (not `TypeError` or `RangeError`):
 * test `kind` to tell the cases apart. The message names the place too.
 *
 * ```js
 * try {
 *   countMessages(history, { format: "gemini" });
 * } catch (err) {
 *   if (err instanceof ContextKeeperError && err.kind === "options") console.log(err.path); // "options.format"
 * }
 * ```
 */
export class ContextKeeperError extends Error {
  constructor(message: string, options?: { kind?: ErrorKind; path?: string | null; cause?: unknown });
  readonly name: "ContextKeeperError";
  readonly kind: ErrorKind;
  /** The place at fault: `messages[3].content[0].text`, `options.model`; null when none. */
  readonly path: string | null;
}
