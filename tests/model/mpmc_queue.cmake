# Model checks of MpmcBoundedQueue's sleep protocol (mpmc_queue.pml): no wake-up is lost and
# every item is popped exactly once, with each consumer popping a quota (a lost wake-up strands
# an item) or popping until the end after a close; with two cells, and with one, where a producer
# sleeps on the full ring. Without the pass-on of a consumer's wake-up, or without either side's
# re-check after announcing itself, spin finds an item stranded. A few seconds each.
conveyor_spin_check(NAME mpmc_queue MODEL mpmc_queue.pml EXPECT pass)
conveyor_spin_check(NAME mpmc_queue_close MODEL mpmc_queue.pml EXPECT pass DEFINES CLOSE)
conveyor_spin_check(NAME mpmc_queue_full MODEL mpmc_queue.pml EXPECT pass DEFINES CAPACITY=1)
conveyor_spin_check(NAME mpmc_queue_full_close MODEL mpmc_queue.pml EXPECT pass
  DEFINES CAPACITY=1 CLOSE)
conveyor_spin_check(NAME mpmc_queue_without_pass_on_finds_violation MODEL mpmc_queue.pml
  EXPECT violation DEFINES NO_PASS_ON_ITEMS)
conveyor_spin_check(NAME mpmc_queue_without_recheck_finds_violation MODEL mpmc_queue.pml
  EXPECT violation DEFINES NO_RECHECK)
conveyor_spin_check(NAME mpmc_queue_without_space_recheck_finds_violation MODEL mpmc_queue.pml
  EXPECT violation DEFINES CAPACITY=1 NO_SPACE_RECHECK)
