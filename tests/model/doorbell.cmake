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
