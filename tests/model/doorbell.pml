/*
 * The Doorbell's wake-up protocol (sync/include/conveyor/sync/doorbell.hpp, waiter.hpp and
 * deferred_wakes.hpp) under x86-TSO, where a store may wait in its core's store buffer while later
 * loads run. docs/design/hand-over.md explains the protocol.
 *
 * A producer (the ringer) publishes items on a lane: it stores the lane's tail, then checks the
 * consumer's announcement and wakes it if it waits. The consumer (the owner) takes items while
 * there are any; otherwise it announces its wait (a store and a full fence, so its announcement is
 * visible at once), re-checks the lane, and parks on its semaphore.
 *
 * After its last item the producer blocks forever, as a source does in a read that does not
 * return: nothing it does later can repair a ring it missed. The check is that the consumer still
 * takes every item: a consumer parked for good with an item in the lane is an invalid end state.
 *
 * Variants (spin -D...):
 *   FULL_FENCE   the ringer fences before its check: its tail store is visible before it loads
 *                (a cooperative owner's ringers, and Doorbell::ring).
 *   (default)    the light fence of the hand-over path: the load may run before the store drains.
 *   BOUNDED      the owner parks for a while at most and re-checks; if that fails, it runs the heavy
 *                fence (membarrier: every store the producer issued is visible), re-checks again,
 *                and only then parks for good.
 *   HEAVY_FIRST  the owner runs the heavy fence before its first park (Recovery::fence_first).
 *   RECHECK      after its last item the producer waits itself, and first rechecks the consumer's
 *                doorbell behind its own full fence (the Waiter's rechecks).
 *   DEFER        a ringer that finds the consumer waiting may defer the wake and owe it instead
 *                (WakeDeferral); SWEEP adds the supervisor, which delivers what is owed.
 * The light fence alone loses a wake-up, and so does a deferral that nobody delivers; the rest
 * is safe. The ordering window's wake-up is the same pairing, with the released count for the
 * lane's tail and the sequencer as the owner.
 */

#define ITEMS 3

byte tail = 0;      /* the lane's tail as the consumer sees it (memory) */
byte buffered = 0;  /* the producer's tail, ahead of memory while its stores are buffered */
bit waiting = 0;    /* the consumer's announcement */
byte tokens = 0;    /* the consumer's semaphore */
bit owed = 0;       /* a deferred wake, as the supervisor sees it (memory) */
bit owed_buffered = 0;  /* the producer's store of owed, behind its tail stores in the buffer */

/* The ringer's wake: the compare-exchange that resets the announcement releases the token. */
inline wake() {
  atomic {
    if
    :: waiting == 1 -> waiting = 0; tokens++
    :: else -> skip
    fi
  }
}

/* The heavy fence (membarrier): the producer's store buffer drains, in order. */
inline heavy_fence() {
  atomic {
    tail = buffered;
    if
    :: owed_buffered == 1 -> owed = 1; owed_buffered = 0
    :: else -> skip
    fi
  }
}

proctype Producer() {
  byte pushed = 0;
  do
  :: pushed < ITEMS ->
     pushed++;
     buffered = pushed;  /* the tail store enters the store buffer */
#ifdef FULL_FENCE
     (tail == buffered);  /* the fence waits until the buffer has drained */
#endif
     if
     :: waiting == 1 -> wake()
#ifdef DEFER
     :: waiting == 1 -> owed_buffered = 1  /* defer: owe the wake instead */
#endif
     :: else -> skip
     fi
  :: else -> break
  od;
#ifdef RECHECK
  (tail == buffered);  /* the announcement's full fence before the producer's own wait */
  if
  :: waiting == 1 -> wake()
  :: else -> skip
  fi;
#endif
end_blocked:
  false  /* blocked for good, like a source in a read that never returns */
}

/* The store buffer drains in order, one store at a time, whenever the hardware likes. */
proctype StoreBuffer() {
end_idle:
  do
  :: atomic { tail < buffered -> tail++ }
  :: atomic { tail == buffered && owed_buffered == 1 -> owed = 1; owed_buffered = 0 }
  od
}

/* Delivers owed wakes: an exchange (a full barrier), then a ring. */
proctype Supervisor() {
end_idle:
  do
  :: atomic { owed == 1 -> owed = 0 };
     wake()
  od
}

proctype Consumer() {
  byte taken = 0;
  do
  :: taken == ITEMS -> break
  :: else ->
     if
     :: tail > taken -> taken = tail
     :: else ->
        waiting = 1;  /* prepare: store and full fence */
        if
        :: tail > taken ->
           /* cancel: withdraw the announcement, or take the token of a ring that beat us */
           atomic {
             if
             :: waiting == 1 -> waiting = 0
             :: else -> tokens > 0; tokens--
             fi
           }
        :: else ->
#ifdef HEAVY_FIRST
           heavy_fence();  /* every buffered store is visible */
           if
           :: tail > taken ->
              atomic {
                if
                :: waiting == 1 -> waiting = 0
                :: else -> tokens > 0; tokens--
                fi
              }
           :: else -> atomic { tokens > 0 -> tokens-- }  /* park until a ring */
           fi
#elif defined(BOUNDED)
           if
           :: atomic { tokens > 0 -> tokens-- }  /* a ring came within the while */
           :: skip ->
              /* the while ran out: re-check; if that fails, the heavy fence makes every buffered
                 store visible, and the owner re-checks once more before it parks for good */
              if
              :: tail > taken -> skip
              :: else -> heavy_fence()
              fi;
              if
              :: tail > taken ->
                 atomic {
                   if
                   :: waiting == 1 -> waiting = 0
                   :: else -> tokens > 0; tokens--
                   fi
                 }
              :: else -> atomic { tokens > 0 -> tokens-- }  /* park for good */
              fi
           fi
#else
           atomic { tokens > 0 -> tokens-- }  /* park until a ring */
#endif
        fi
     fi
  od;
  assert(taken == ITEMS && tokens == 0)
}

init {
  atomic {
    run Producer();
    run StoreBuffer();
#ifdef SWEEP
    run Supervisor();
#endif
    run Consumer()
  }
}
