/*
 * The paper's CWFMO group lock with its ORIGINAL Release ("Compound Win32 Synchronization
 * Objects", LOCKS.CPP), step by step. Expected: spin finds the goofup the author found with pen
 * and paper: the last member decrements its counter, a newcomer of the same group passes the
 * still-set local event, and then the "last" member opens the global event to the other group.

 * Each Win32 call is one atomic step, as the kernel makes it: SetEvent, ResetEvent,
 * InterlockedIncrement/Decrement, and WaitForMultipleObjects(wait-any), which takes the first
 * signalled handle from the left and consumes it if it is an auto-reset event. Everything
 * between two calls may interleave with the other threads.
 * Checked: no two groups are ever inside together (assertion) and no deadlock (invalid end
 * state), with 2 groups x 2 threads looping forever.
 */

#define RELEASE_ORIGINAL

#define GROUPS 2
#define THREADS_PER_GROUP 2

bool global_event = true;          /* hMutex = CreateEvent(NULL, FALSE, TRUE, NULL): auto-reset, set */
bool local_event[GROUPS];          /* hEvents[i] = CreateEvent(NULL, TRUE, FALSE, NULL): manual, reset */
short counter[GROUPS];             /* pCounters[i] = -1 (set in init) */
byte inside[GROUPS];               /* the harness's iSanity[] */
#ifdef CORRECTED
bool group_section[GROUPS];        /* per-group CRITICAL_SECTION (corrected version only) */
#endif

inline enter_group_section(g) {
#ifdef CORRECTED
  atomic { !group_section[g] -> group_section[g] = true }
#else
  skip
#endif
}

inline leave_group_section(g) {
#ifdef CORRECTED
  group_section[g] = false
#else
  skip
#endif
}

proctype member(byte g) {
  byte woken_by;                   /* WaitForMultipleObjects' return index */
  short after;                     /* what InterlockedDecrement returned */
end_idle:
  do
  :: true ->
     /* ---- CWFMO::Claim(i) ---- */
     enter_group_section(g);
     /* if (WaitForMultipleObjects(2, pHandleArrays[i], FALSE, INFINITE) == WAIT_OBJECT_0) */
     atomic {
       (global_event || local_event[g]) ->
       if
       :: global_event -> global_event = false; woken_by = 0   /* auto-reset: consumed */
       :: else -> woken_by = 1                                 /* manual-reset: stays set */
       fi
     }
     if
     :: woken_by == 0 -> local_event[g] = true                 /*   SetEvent(hEvents[i]); */
     :: else -> skip
     fi;
     counter[g]++;                                             /* InterlockedIncrement(&pCounters[i]); */
     leave_group_section(g);

     /* ---- the harness: InterlockedIncrement(&iSanity[iID]) and the goofup check ---- */
     inside[g]++;
     assert(inside[1 - g] == 0);
     inside[g]--;

     /* ---- CWFMO::Release(i) ---- */
     enter_group_section(g);
#ifdef RELEASE_REVISED
     local_event[g] = false;                                   /* ResetEvent(hEvents[i]); */
     atomic { counter[g]--; after = counter[g] }               /* if (InterlockedDecrement(...) < 0) */
     if
     :: after < 0 -> global_event = true                       /*   SetEvent(hMutex); */
     :: else -> local_event[g] = true                          /* else SetEvent(hEvents[i]); */
     fi;
#else
     atomic { counter[g]--; after = counter[g] }               /* if (InterlockedDecrement(...) < 0) */
     if
     :: after < 0 ->
        local_event[g] = false;                                /*   { ResetEvent(hEvents[i]); */
        global_event = true                                    /*     SetEvent(hMutex); } */
     :: else -> skip
     fi;
#endif
     leave_group_section(g);
  od
}

init {
  atomic {
    byte g = 0;
    byte t;
    do
    :: g < GROUPS ->
       counter[g] = -1;
       t = 0;
       do
       :: t < THREADS_PER_GROUP -> run member(g); t++
       :: else -> break
       od;
       g++
    :: else -> break
    od
  }
}
