# Model checks of the Doorbell's wake-up protocol under x86-TSO (doorbell.pml). The hand-over's
# light fence alone loses a wake-up, which spin must find; with the owner's bounded park, or with a
# full fence on the ringer's side (and with both), every item is taken. A second or less each.
conveyor_spin_check(NAME doorbell_light_fence_alone_finds_violation MODEL doorbell.pml
  EXPECT violation)
conveyor_spin_check(NAME doorbell_light_fence_bounded_park MODEL doorbell.pml EXPECT pass
  DEFINES BOUNDED)
conveyor_spin_check(NAME doorbell_full_fence MODEL doorbell.pml EXPECT pass DEFINES FULL_FENCE)
conveyor_spin_check(NAME doorbell_full_fence_bounded_park MODEL doorbell.pml EXPECT pass
  DEFINES FULL_FENCE BOUNDED)
# The other safeguards of sync::Waiter and sync::WakeDeferral: the heavy fence before the first
# park (fence_first), the ringer's recheck before it waits itself, and a deferred wake, which
# strands an item unless somebody delivers it (the supervisor's sweep).
conveyor_spin_check(NAME doorbell_light_fence_heavy_first MODEL doorbell.pml EXPECT pass
  DEFINES HEAVY_FIRST)
conveyor_spin_check(NAME doorbell_light_fence_recheck MODEL doorbell.pml EXPECT pass
  DEFINES RECHECK)
conveyor_spin_check(NAME doorbell_deferred_wake_undelivered_finds_violation MODEL doorbell.pml
  EXPECT violation DEFINES FULL_FENCE DEFER)
conveyor_spin_check(NAME doorbell_deferred_wake_swept MODEL doorbell.pml EXPECT pass
  DEFINES FULL_FENCE DEFER SWEEP)
conveyor_spin_check(NAME doorbell_deferred_wake_swept_bounded_park MODEL doorbell.pml EXPECT pass
  DEFINES DEFER SWEEP BOUNDED)
conveyor_spin_check(NAME doorbell_deferred_wake_swept_light_fence_alone_finds_violation
  MODEL doorbell.pml EXPECT violation DEFINES DEFER SWEEP)
