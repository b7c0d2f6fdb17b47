
*€çÀóB	f16_typed