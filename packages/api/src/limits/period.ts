/** A quota period: one UTC calendar month. `end` is exclusive and is when the quotas reset. */
export interface Period {
  /** `YYYY-MM`, the month's key in counters and alerts. */
  key: string;
  start: Date;
  end: Date;
  /** `end` as ISO 8601, the value of the quota headers' reset. */
  resetAt: string;
}

export function periodOf(at: Date): Period {
  const year = at.getUTCFullYear();
  const month = at.getUTCMonth();
  const end = new Date(Date.UTC(year, month + 1, 1));
  return {
    key: `${year}-${String(month + 1).padStart(2, '0')}`,
    start: new Date(Date.UTC(year, month, 1)),
    end,
    resetAt: end.toISOString(),
  };
}

/** The period containing `nowMs`; recomputed only when the month turns, since every request asks. */
export class PeriodClock {
  private current: Period;
  private readonly now: () => number;

  constructor(now: () => number) {
    this.now = now;
    this.current = periodOf(new Date(now()));
  }

  at(nowMs: number = this.now()): Period {
    if (nowMs >= this.current.end.getTime() || nowMs < this.current.start.getTime())
      this.current = periodOf(new Date(nowMs));
    return this.current;
  }
}
