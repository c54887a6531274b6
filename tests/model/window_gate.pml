/*
 * The ordering window shared by the branches of a tee (framework/.../detail/window_gate.hpp)
 * under x86-TSO. A sequencer numbers items 0, 1, ..., ITEMS - 1 and issues number s only while
 * s < min(released) + WINDOW, where each of CONSUMERS in-order stages (one per branch: every
 * branch gets every item) publishes how far it has released. docs/design/ordering.md explains it.
 *
 * A consumer processes the items in order. After each it stores its released count (a store that
 * may wait in its core's store buffer) and rings the sequencer's doorbell with the hand-over's
 * cheap check (no fence): if the sequencer waits and half the window is free, reading the other
 * consumers' counts from memory, it wakes it. Two consumers can each read the other's old count
 * while their own stores are still buffered, and neither rings. What saves the wake-up:
 *   - before a consumer sleeps for want of items, its Waiter runs its rechecks behind the
 *     announcement's full fence (WindowGate::recheck): its own count is then visible, and it
 *     rings if the window is half free (Dekker: of two consumers, one sees the other's count);
 *   - the sequencer parks for a while at most; if the window is still shut, it runs the heavy fence
 *     (every buffered store becomes visible), looks again, and only then parks until a ring.
 * The items themselves reach the consumers through lanes whose wake-ups doorbell.pml checks; here
 * a consumer simply blocks until its next item is issued.
 *
 * The checks: the sequencer never issues a number that a consumer's reorder buffer has no slot for
 * (s < that consumer's own released + WINDOW), and nobody is left asleep for good (an invalid end
 * state): every item reaches every consumer.
 *
 * Variants (spin -D...):
 *   NO_RECHECK   consumers skip the recheck before they sleep;
 *   NO_RECOVERY  the sequencer parks until a ring at once, without the bounded park and heavy fence.
 *   ONE_CONSUMER a single in-order stage (no tee).
 * With the rechecks, every item reaches every consumer, with or without the sequencer's recovery.
 * Without them, two consumers lose a wake-up even with it (the heavy fence runs once per wait; the
 * stale reads can come after it), which spin must find; one consumer is safe with the recovery
 * alone, and loses a wake-up with neither.
 */

#define ITEMS 5
#define WINDOW 3
#ifdef ONE_CONSUMER
#define CONSUMERS 1
#else
#define CONSUMERS 2
#endif

byte issued = 0;             /* numbers below this have been issued (the lanes, abstracted) */
byte released[CONSUMERS];    /* each consumer's count as memory holds it */
byte buffered[CONSUMERS];    /* each consumer's count as it stored it (ahead while buffered) */
byte wake_at = 0;            /* the sequencer's hysteresis: ring once min(released) >= wake_at */
bit waiting = 0;             /* the sequencer's announcement (a store and a full fence) */
byte tokens = 0;             /* the sequencer's semaphore */

/* The least count in memory, as the sequencer reads it. */
inline least_in_memory(result) {
  result = released[0];
#ifndef ONE_CONSUMER
  if
  :: released[1] < result -> result = released[1]
  :: else -> skip
  fi
#endif
}

/* The least count as consumer `me` reads it: its own from its store buffer (store forwarding), the
   others' from memory. */
inline least_seen_by(me, result) {
  result = buffered[me];
#ifndef ONE_CONSUMER
  if
  :: released[1 - me] < result -> result = released[1 - me]
  :: else -> skip
  fi
#endif
}

/* A ring, if the sequencer waits and half its window is free as `me` sees it: the compare-exchange
   that resets the announcement releases the token. */
inline ring(me, least) {
  least_seen_by(me, least);
  atomic {
    if
    :: waiting == 1 && least >= wake_at -> waiting = 0; tokens++
    :: else -> skip
    fi
  }
}

/* The heavy fence (membarrier): every consumer's store buffer drains. */
inline heavy_fence() {
  atomic {
    released[0] = buffered[0];
#ifndef ONE_CONSUMER
    released[1] = buffered[1]
#endif
  }
}

/* The sequencer withdraws its announcement, or takes the token of a ring that beat it. */
inline cancel() {
  atomic {
    if
    :: waiting == 1 -> waiting = 0
    :: else -> tokens > 0; tokens--
    fi
  }
}

proctype Sequencer() {
  byte s = 0;
  byte least = 0;
  do
  :: s == ITEMS -> break
  :: else ->
     least_in_memory(least);
     if
     :: s < least + WINDOW ->
        /* every consumer has a slot for s: its own count is at least what memory holds */
        assert(s < buffered[0] + WINDOW);
#ifndef ONE_CONSUMER
        assert(s < buffered[1] + WINDOW);
#endif
        issued = s + 1;
        s++
     :: else ->
        /* request_wake_at, then prepare (a store and a full fence), then re-check */
        atomic { wake_at = s + 1 - WINDOW + WINDOW / 2; waiting = 1 };
        least_in_memory(least);
        if
        :: s < least + WINDOW -> cancel()
        :: else ->
#ifdef NO_RECOVERY
           atomic { tokens > 0 -> tokens-- }  /* park until a ring */
#else
           if
           :: atomic { tokens > 0 -> tokens-- }  /* a ring came within the while */
           :: skip ->
              /* the while ran out: look again, then the heavy fence, then once more */
              least_in_memory(least);
              if
              :: s < least + WINDOW -> skip
              :: else -> heavy_fence(); least_in_memory(least)
              fi;
              if
              :: s < least + WINDOW -> cancel()
              :: else -> atomic { tokens > 0 -> tokens-- }  /* park until a ring */
              fi
           fi
#endif
        fi
     fi
  od
}

proctype Consumer(byte me) {
  byte next = 0;
  byte least = 0;
  do
  :: next == ITEMS -> break
  :: else ->
     if
     :: issued > next -> skip
     :: else ->
#ifndef NO_RECHECK
        /* about to sleep: the announcement's full fence drains its buffer; then its rechecks */
        released[me] == buffered[me];
        ring(me, least);
#endif
        issued > next  /* sleeps until the item comes (doorbell.pml checks that wake-up) */
     fi;
     next++;
     buffered[me] = next;  /* WindowGate::advance: the store enters the store buffer */
     ring(me, least)       /* ring_after_hand_over: no fence before its loads */
  od;
  /* the last count drains before the consumer ends (its worker's exit is a full barrier) */
  released[me] == buffered[me]
}

/* Each consumer's store buffer drains in order, one store at a time, whenever the hardware likes. */
proctype StoreBuffer(byte me) {
end_idle:
  do
  :: atomic { released[me] < buffered[me] -> released[me]++ }
  od
}

init {
  atomic {
    run Sequencer();
    run StoreBuffer(0);
    run Consumer(0);
#ifndef ONE_CONSUMER
    run StoreBuffer(1);
    run Consumer(1)
#endif
  }
}
