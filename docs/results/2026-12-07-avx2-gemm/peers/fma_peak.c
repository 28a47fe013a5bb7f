#include <immintrin.h>
#include <stdio.h>
#include <time.h>
int main(){ __m256 a[12]; for(int i=0;i<12;i++) a[i]=_mm256_set1_ps(i*0.001f); __m256 m=_mm256_set1_ps(0.9999f), c=_mm256_set1_ps(0.0001f);
 long n=400000000; struct timespec t0,t1; clock_gettime(CLOCK_MONOTONIC,&t0);
 for(long k=0;k<n;k++){
#pragma GCC unroll 12
 for(int i=0;i<12;i++) a[i]=_mm256_fmadd_ps(a[i],m,c);} 
 clock_gettime(CLOCK_MONOTONIC,&t1); double s=(t1.tv_sec-t0.tv_sec)+1e-9*(t1.tv_nsec-t0.tv_nsec);
 float r=0; for(int i=0;i<12;i++) r+=a[i][0]; printf("%.1f GFLOP/s (%g)\n", n*12.0*16/s/1e9, r); }
