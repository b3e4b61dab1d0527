// futex ping-pong between two threads: each sleeps on its own word, the other wakes it.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>
#include <algorithm>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
static void fwait(std::atomic<int>* a, int v){ while(a->load()==v) syscall(SYS_futex,a,FUTEX_WAIT_PRIVATE,v,nullptr,nullptr,0);}
static void fwake(std::atomic<int>* a){ syscall(SYS_futex,a,FUTEX_WAKE_PRIVATE,1,nullptr,nullptr,0);}
int main(int argc,char**argv){
  int iters = 20000; int gap_us = argc>1?atoi(argv[1]):0;
  std::atomic<int> a{0}, b{0};
  std::vector<double> lat;
  std::thread t([&]{ for(int i=0;i<iters;++i){ fwait(&a,i); b.store(i+1); fwake(&b);} });
  for(int i=0;i<iters;++i){
    if(gap_us) { auto e=std::chrono::steady_clock::now()+std::chrono::microseconds(gap_us); while(std::chrono::steady_clock::now()<e){} }
    auto t0=std::chrono::steady_clock::now();
    a.store(i+1); fwake(&a); fwait(&b,i);
    lat.push_back(std::chrono::duration<double,std::micro>(std::chrono::steady_clock::now()-t0).count());
  }
  t.join();
  std::sort(lat.begin(),lat.end());
  double s=0; for(double x:lat) s+=x;
  printf("futex ping-pong RT (two wakes): median %.2f us mean %.2f p99 %.2f\n", lat[lat.size()/2], s/lat.size(), lat[lat.size()*99/100]);
}
