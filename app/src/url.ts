// URLs as the app shows them.

/** The host (and port) of `url`, or `url` itself when it is not one. */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
