BscaleJÌýÒ=Ûn]¿
Re?