/*
 * MpmcBoundedQueue's sleep protocol (sync/include/conveyor/sync/mpmc_bounded_queue.hpp): cells
 * with sequences in half steps, positions claimed by compare-exchange, each side's waiter count
 * and semaphore, the re-check after announcing, withdraw, and the pass-on of a wake-up that a
 * sleeper spent on a cell still being written (or freed out of order).
 *
 * Every step that takes part in sleeping is seq_cst in the code (the sequence stores, the waiter
 * counts, the re-checks), so the model is sequentially consistent: each atomic block is one
 * read-modify-write of the code, every other statement one load or store. A failed
 * compare-exchange just retries, so the weak form's spurious failures add nothing. The spin
 * before sleeping is a nondeterministic look at the condition.
 *
 * Two ways to end, each checked:
 *   (default) QUOTAS: no close; each consumer pops its quota. If a wake-up is lost, a consumer
 *             sleeps while an item of its quota waits, and spin reports an invalid end state.
 *   CLOSE     a closer closes once every producer is done; consumers pop until the end. Checks
 *             that the end is reached by every consumer, after the last item.
 * At the end of every run, each item was popped exactly once.
 *
 * Sizes: CAPACITY (2), PRODUCERS (2), ITEMS_EACH (1), two consumers; with a capacity of 1 the
 * second producer sleeps on a full ring.
 *
 * Variants that remove one safeguard (spin finds the stranded item, as a deadlock):
 *   NO_PASS_ON_ITEMS  a pop does not pass a wake-up on to another sleeping consumer: the
 *                     wake-up a consumer spent on a cell still being written is lost;
 *   NO_RECHECK        a consumer sleeps without re-checking after it announced itself;
 *   NO_SPACE_RECHECK  a producer sleeps without re-checking after it announced itself.
 * NO_PASS_ON_SPACE (a push does not pass a wake-up on to another sleeping producer) finds no
 * error: every later pop wakes a producer, and a ring with no pop to come is empty, so the
 * pass-on only spares a producer the wait for the next pop while a cell freed out of order is
 * free. Not modelled: the bulk forms (one claim and one wake-up call for a run), abort, timed
 * waits.
 */

#ifndef CAPACITY
#define CAPACITY 2
#endif
#ifndef PRODUCERS
#define PRODUCERS 2
#endif
#ifndef ITEMS_EACH
#define ITEMS_EACH 1
#endif
#define CONSUMERS 2
#define TOTAL (PRODUCERS * ITEMS_EACH)

byte seq[CAPACITY];   /* free for position p: 2p; holding p's item: 2p + 1 */
byte cell[CAPACITY];  /* the item a cell holds (1..TOTAL), 0 when none */
byte enq = 0;         /* enqueue_'s position */
bit closed = 0;       /* enqueue_'s closed bit: one word with enq */
byte deq = 0;         /* dequeue_ */
byte consumers_waiting = 0;
byte producers_waiting = 0;
byte items = 0;       /* the consumers' semaphore */
byte free_slots = 0;  /* the producers' semaphore */
byte popped[TOTAL + 1];
byte producers_done = 0;
byte consumers_ended = 0;

inline wake(waiting, tokens, count) {
  atomic {
    if
    :: waiting > 0 -> woken = (waiting < count -> waiting : count); waiting = waiting - woken
    :: else -> woken = 0
    fi
  };
  atomic { tokens = tokens + woken; woken = 0 }  /* the release, after the compare-exchange */
}

inline wake_all(waiting, tokens) {
  if
  :: waiting == 0 -> skip
  :: else ->
     atomic { woken = waiting; waiting = 0 };
     atomic { tokens = tokens + woken; woken = 0 }
  fi
}

/* A waiter that need not sleep takes itself off the count, or takes the token of the waker that
 * already did. */
inline withdraw(waiting, tokens) {
  atomic {
    if
    :: waiting > 0 -> waiting--; withdrew = 1
    :: else -> withdrew = 0
    fi
  };
  if
  :: atomic { withdrew -> withdrew = 0 }
  :: else -> atomic { tokens > 0 -> tokens-- }
  fi
}

/* item_or_end: the closed bit, then the head, then the head's sequence (three loads). */
inline item_or_end() {
  if
  :: closed -> ready = 1
  :: else ->
     look = deq;
     atomic { ready = (seq[look % CAPACITY] >= 2 * look + 1); look = 0 }
  fi
}

inline space_or_end() {
  atomic { look = enq; was_closed = closed };
  if
  :: atomic { was_closed -> ready = 1; was_closed = 0; look = 0 }
  :: else -> atomic { ready = (seq[look % CAPACITY] >= 2 * look); look = 0 }
  fi
}

inline pass_on_items() {
  if
  :: consumers_waiting > 0 ->
     item_or_end();
     if
     :: atomic { ready -> ready = 0 }; wake(consumers_waiting, items, 1)
     :: else -> skip
     fi
  :: else -> skip
  fi
}

inline pass_on_space() {
  if
  :: producers_waiting > 0 ->
     space_or_end();
     if
     :: atomic { ready -> ready = 0 }; wake(producers_waiting, free_slots, 1)
     :: else -> skip
     fi
  :: else -> skip
  fi
}

proctype Producer(byte first) {
  byte next = first;
  byte word, s, woken, look;
  bit was_closed, ready, withdrew;
  do
  :: next >= first + ITEMS_EACH -> break
  :: else ->
claim:
     atomic { word = enq; was_closed = closed };
     if
     :: was_closed -> assert(false)  /* nothing closes before every producer is done */
     :: else -> skip
     fi;
     s = seq[word % CAPACITY];
     if
     :: atomic { s == 2 * word -> s = 0 } ->
        if
        :: atomic { enq == word && !closed -> enq = word + 1 } ->
           /* fill: the element, then its sequence (seq_cst) */
           cell[word % CAPACITY] = next;
           seq[word % CAPACITY] = 2 * word + 1;
           wake(consumers_waiting, items, 1);
#ifndef NO_PASS_ON_SPACE
           pass_on_space();
#endif
           atomic { next++; word = 0 }
        :: else -> goto claim                 /* another producer moved on */
        fi
     :: atomic { s > 2 * word -> s = 0 } -> goto claim  /* claimed by another producer */
     :: atomic { s < 2 * word -> s = 0; word = 0 } ->   /* full: wait_for_space */
        space_or_end();
        if
        :: atomic { ready -> ready = 0 } -> goto claim  /* the spin saw room */
        :: atomic { true -> ready = 0 } ->
           producers_waiting++;
#ifndef NO_SPACE_RECHECK
           space_or_end();
           if
           :: atomic { ready -> ready = 0 }; withdraw(producers_waiting, free_slots)
           :: else -> atomic { free_slots > 0 -> free_slots-- }
           fi
#else
           atomic { free_slots > 0 -> free_slots-- }
#endif
        fi;
        goto claim
     fi
  od;
  producers_done++
}

proctype Consumer(byte quota) {
  byte head, s, woken, look, value, end;
  byte got = 0;
  bit ready, withdrew;
  do
  :: got == quota -> break
  :: else ->
claim:
     head = deq;
     s = seq[head % CAPACITY];
     if
     :: atomic { s == 2 * head + 1 -> s = 0 } ->
        if
        :: atomic { deq == head -> deq = head + 1 } ->
           /* take_one: the element, the cell freed (seq_cst), then the wake-ups */
           atomic {
             value = cell[head % CAPACITY];
             cell[head % CAPACITY] = 0;
             popped[value]++;
             assert(popped[value] == 1);
             value = 0
           };
           atomic { seq[head % CAPACITY] = 2 * (head + CAPACITY); head = 0 };
           wake(producers_waiting, free_slots, 1);
#ifndef NO_PASS_ON_ITEMS
           pass_on_items();
#endif
           got++
        :: else -> goto claim
        fi
     :: atomic { s > 2 * head + 1 -> s = 0 } -> goto claim  /* taken by another consumer */
     :: atomic { s < 2 * head + 1 -> s = 0; head = 0 } ->  /* empty, or still being written */
        atomic { end = enq; ready = closed };
        if
        :: atomic { ready && end == deq -> ready = 0; end = 0 } ->
           wake_all(consumers_waiting, items);
           break                             /* the end */
        :: atomic { ready && end != deq -> ready = 0; end = 0 } ->
           goto claim                        /* a push claimed before the close: wait for it */
        :: atomic { else -> end = 0 }
        fi;
        /* wait_for_items */
        item_or_end();
        if
        :: atomic { ready -> ready = 0 } -> goto claim  /* the spin saw an item or the end */
        :: atomic { true -> ready = 0 } ->
           consumers_waiting++;
#ifndef NO_RECHECK
           item_or_end();
           if
           :: atomic { ready -> ready = 0 }; withdraw(consumers_waiting, items)
           :: else -> atomic { items > 0 -> items-- }
           fi
#else
           atomic { items > 0 -> items-- }
#endif
        fi;
        goto claim
     fi
  od;
  consumers_ended++
}

#ifdef CLOSE
proctype Closer() {
  byte woken;
  producers_done == PRODUCERS;
  closed = 1;  /* fetch_or of the closed bit */
  wake_all(consumers_waiting, items);
  wake_all(producers_waiting, free_slots)
}
#endif

init {
  byte i;
  atomic {
    for (i : 0 .. CAPACITY - 1) { seq[i] = 2 * i }
    for (i : 0 .. PRODUCERS - 1) { run Producer(1 + i * ITEMS_EACH) }
#ifdef CLOSE
    run Consumer(255);
    run Consumer(255);
    run Closer();
#else
    /* the quotas add up to the items pushed */
    run Consumer(TOTAL / 2);
    run Consumer(TOTAL - TOTAL / 2);
#endif
  }
  consumers_ended == CONSUMERS;
  for (i : 1 .. TOTAL) { assert(popped[i] == 1) }
}
