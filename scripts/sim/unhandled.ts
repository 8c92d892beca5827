// A promise rejection nobody handles is, in a real broker process, a crash (Node's default):
// the simulation collects them while it runs and reports each as a violation.

export interface UnhandledCapture {
  /** The reasons collected since the last call. */
  take(): unknown[];
  stop(): void;
}

export function captureUnhandledRejections(): UnhandledCapture {
  let reasons: unknown[] = [];
  const onRejection = (reason: unknown): void => {
    reasons.push(reason);
  };
  process.on('unhandledRejection', onRejection);
  return {
    take() {
      const out = reasons;
      reasons = [];
      return out;
    },
    stop() {
      process.off('unhandledRejection', onRejection);
    },
  };
}
