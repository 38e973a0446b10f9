//! Files written so that a crash or a second process never leaves half of one.
