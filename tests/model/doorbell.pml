/*
 * The Doorbell's wake-up protocol (framework/include/conveyor/framework/detail/doorbell.hpp)
 * under x86-TSO, where a store may wait in its core's store buffer while later loads run.
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
 * The light fence without BOUNDED loses a wake-up; each of the other three combinations is safe.
 */

#define ITEMS 3

byte tail = 0;      /* the lane's tail as the consumer sees it (memory) */
byte buffered = 0;  /* the producer's tail, ahead of memory while its stores are buffered */
bit waiting = 0;    /* the consumer's announcement */
byte tokens = 0;    /* the consumer's semaphore */

/* The ringer's wake: the compare-exchange that resets the announcement releases the token. */
inline wake() {
  atomic {
    if
    :: waiting == 1 -> waiting = 0; tokens++
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
     :: else -> skip
     fi
  :: else -> break
  od;
end_blocked:
  false  /* blocked for good, like a source in a read that never returns */
}

/* The store buffer drains in order, one store at a time, whenever the hardware likes. */
proctype StoreBuffer() {
end_idle:
  do
  :: atomic { tail < buffered -> tail++ }
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
#ifdef BOUNDED
           if
           :: atomic { tokens > 0 -> tokens-- }  /* a ring came within the while */
           :: skip ->
              /* the while ran out: re-check; if that fails, the heavy fence makes every buffered
                 store visible, and the owner re-checks once more before it parks for good */
              if
              :: tail > taken -> skip
              :: else -> atomic { tail = buffered }
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
    run Consumer()
  }
}
