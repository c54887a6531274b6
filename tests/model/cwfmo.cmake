# The paper's CWFMO group lock (seed 004), modelled call by call; see docs/locktest.md.
conveyor_spin_check(NAME cwfmo_original_finds_violation MODEL cwfmo_original.pml EXPECT violation)
# The paper's revised Release is still unsafe: spin must find the two-releasers goofup.
conveyor_spin_check(NAME cwfmo_revised_finds_violation MODEL cwfmo_revised.pml EXPECT violation)
# The revised idea made sound with a per-group critical section: must pass.
conveyor_spin_check(NAME cwfmo_corrected MODEL cwfmo_corrected.pml EXPECT pass)
