"""The fuzz campaign (`make fuzz`) and the pieces the normal suite shares with it."""
