#include <iostream>
int main() { std::cout << "modelc\n"; return 0; }
