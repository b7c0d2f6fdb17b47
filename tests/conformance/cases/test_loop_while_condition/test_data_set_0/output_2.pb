BsquaresJ`κν³?KΩL?Ώ‹—>άφ>±Jn@ ¥P?κν³@KΩL@Ώ‹—?άφ?±JnA ¥P@§kJAutζ@7}*@·,@
BTΊκ@κν³AKΩLAΏ‹—@άφ@±JnB ¥PA